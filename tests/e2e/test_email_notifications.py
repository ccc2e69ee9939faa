"""Email notifications on real processes: the web app's use cases queue them, the maintenance runner
(`python -m jobs.retention --every …`) sends them to a real SMTP server (sandbox/smtp_sink.py), and each
arrives once, by Message-ID, through failures and a killed sender (README "Email notifications")."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from nexo import create_app
from nexo.formatting import format_order_number
from nexo.mail.sender import message_id
from tests.conftest import AuthActions
from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import csrf_token
from tests.mail_support import SINK_PASSWORD, Senders, start_sink
from tests.relay_support import ROOT, dead_letters_of, insert_confirmed_orders, wait_until

PLATINO = "Ferretería Platino SA"


@pytest.fixture(scope="module")
def sink():
    proc, handle = start_sink(Path(tempfile.mkdtemp(prefix="nexo-sink-")))
    yield handle
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def smtp(sink):
    sink.reset()
    yield sink
    sink.reset()


@pytest.fixture(scope="module")
def mail_app(sink, settings):
    """The app with SMTP_URL set (at the sink): its use cases queue emails."""
    application = create_app(settings=sink.with_mail(settings), test_config={"TESTING": True})
    yield application
    application.extensions["nexo.db"].close()


@pytest.fixture
def senders(smtp):
    handle = Senders(smtp)
    yield handle
    handle.stop_all()


def _order_waiting(client, auth, lines=(("COR-118", 1),), *, html: str | None = None) -> tuple[str, dict]:
    """vendedor1 enters an order over Platino's limit through the form; returns its id and the posted form."""
    auth.login("vendedor1")
    page = html or client.get("/orders/new").get_data(as_text=True)
    data = form_data(page, PLATINO, list(lines))
    response = client.post("/orders/new", data=data)
    assert response.status_code == 303, response.get_data(as_text=True)[:500]
    auth.logout()
    return order_id_from(response.headers["Location"]), data


def _rows(db, where: str = "true", params=()) -> list[dict]:
    with db.reading() as conn:
        return conn.execute(f"SELECT * FROM email_message WHERE {where} ORDER BY id", list(params)).fetchall()


def _number(db, order_id: str) -> str:
    with db.reading() as conn:
        return format_order_number(conn.execute("SELECT number FROM orders WHERE id = %s", [order_id]).fetchone()["number"])


def test_an_order_waiting_for_credit_mails_the_credit_officer_exactly_once(mail_app, db, smtp, senders):
    client = mail_app.test_client()
    auth = AuthActions(client)
    order_id, posted = _order_waiting(client, auth)
    # The same form sent again (a double click): the order is replayed, nothing new is queued.
    auth.login("vendedor1")
    fresh = csrf_token(client.get("/orders/new").get_data(as_text=True))  # the new session's token
    assert client.post("/orders/new", data={**posted, "csrf_token": fresh}).status_code == 303
    rows = _rows(db)
    assert [(r["recipient"], r["status"]) for r in rows] == [("laura@example.com", "PENDIENTE")]

    senders.start()
    wait_until(lambda: _rows(db, "status = 'ENVIADO'"), timeout=30, message="the email was not sent")
    wait_until(smtp.messages, timeout=10)
    messages = smtp.messages()
    assert len(messages) == 1
    mail = messages[0]
    number = _number(db, order_id)
    assert mail["rcpt_tos"] == ["laura@example.com"]
    assert number in mail["subject"] and "autorización" in mail["subject"]
    assert PLATINO in mail["body"] and "$ 12.500,00" in mail["body"] and "Vendedor A" in mail["body"]
    for code in ("PENDIENTE_AUTORIZACION", "credit.authorize", "RN-0", order_id):
        assert code not in mail["subject"] + mail["body"]
    assert mail["message_id"] == message_id(rows[0]["dedupe_key"], "Nexo <nexo@example.com>")


def test_an_order_refused_for_stock_mails_nobody(mail_app, db):
    # The email is part of the order's transaction: an order that rolls back (not enough stock) mails no one.
    client = mail_app.test_client()
    auth = AuthActions(client)
    auth.login("vendedor1")
    page = client.get("/orders/new").get_data(as_text=True)
    response = client.post("/orders/new", data=form_data(page, PLATINO, [("COR-200", 1), ("COR-118", 2)]))
    assert response.status_code == 422
    assert _rows(db) == []


def test_a_credit_decision_mails_the_salesperson(mail_app, db, smtp, senders):
    client = mail_app.test_client()
    auth = AuthActions(client)
    rejected, _ = _order_waiting(client, auth)
    approved, _ = _order_waiting(client, auth, [("COR-200", 4)])
    auth.login("laura")
    token = csrf_token(client.get("/credit/queue").get_data(as_text=True))
    reason = "Tiene facturas vencidas de 60 días"
    assert client.post(f"/credit/queue/{rejected}/reject", data={"csrf_token": token, "reason": reason}).status_code == 303
    assert (
        client.post(f"/credit/queue/{approved}/approve", data={"csrf_token": token, "note": "Habló con Marta"}).status_code == 303
    )

    senders.start()
    wait_until(lambda: len(smtp.messages()) >= 4, timeout=30, message="four emails expected (2 waiting, 2 decisions)")
    to_salesperson = {m["subject"]: m for m in smtp.messages() if m["rcpt_tos"] == ["vendedor1@example.com"]}
    assert sorted(to_salesperson) == sorted(
        [f"Crédito rechazó tu pedido {_number(db, rejected)}", f"Crédito aprobó tu pedido {_number(db, approved)}"]
    )
    no = to_salesperson[f"Crédito rechazó tu pedido {_number(db, rejected)}"]["body"]
    yes = to_salesperson[f"Crédito aprobó tu pedido {_number(db, approved)}"]["body"]
    assert reason in no and "Laura (crédito)" in no and "volvió al stock" in no
    assert "Habló con Marta" in yes and "confirmado" in yes
    assert len(smtp.messages()) == 4


def test_a_dead_letter_mails_the_owner_once(mail_app, db, smtp, senders, fakes, relay):
    fakes.set_mode("fiscal", "error_4xx")
    order = insert_confirmed_orders(db, 1)[0]
    relay.start_workers(1)
    relay.start_sweepers(1)
    wait_until(lambda: dead_letters_of(db, order.fiscal_event_id), timeout=30, message="no dead letter opened")
    senders.start()
    wait_until(smtp.messages, timeout=30, message="the dead letter was not mailed")
    messages = smtp.messages()
    assert [m["rcpt_tos"] for m in messages] == [["marta@example.com"]]
    number = _number(db, order.order_id)
    assert number in messages[0]["subject"] and number in messages[0]["body"]
    assert "Servicio fiscal (facturación)" in messages[0]["body"] and "Entregas fallidas" in messages[0]["body"]
    # Later passes announce nothing again.
    time.sleep(10 * 0.2)  # ten more passes (MAIL_POLL_S)
    senders.stop_all()
    assert len(smtp.messages()) == 1 and len(_rows(db)) == 1


def test_with_the_server_failing_for_a_while_every_email_arrives_once(mail_app, db, smtp, senders):
    client = mail_app.test_client()
    auth = AuthActions(client)
    orders = [_order_waiting(client, auth, [("CAB-045", n)])[0] for n in (2, 3, 4)]
    smtp.set_mode("fail_451", times=5)  # five temporary refusals, then the server recovers
    senders.start()
    wait_until(lambda: len(_rows(db, "status = 'ENVIADO'")) == 3, timeout=60, message="not every email was sent")
    messages = smtp.messages()
    assert sorted(m["message_id"] for m in messages) == sorted(
        message_id(r["dedupe_key"], "Nexo <nexo@example.com>") for r in _rows(db)
    ), "each email exactly once"
    assert {_number(db, o) for o in orders} == {m["subject"].split()[2] for m in messages}
    assert sum(r["attempts"] for r in _rows(db)) == 3 + 5


def test_an_email_the_server_refuses_for_good_ends_failed_and_shows_on_ops(mail_app, db, smtp, senders):
    client = mail_app.test_client()
    auth = AuthActions(client)
    _order_waiting(client, auth)
    smtp.set_mode("fail_550")
    senders.start()
    failed = wait_until(lambda: _rows(db, "status = 'FALLIDO'"), timeout=30, message="the email did not end failed")
    assert failed[0]["attempts"] == 1 and "550" in failed[0]["last_error"]
    assert smtp.messages() == []
    auth.login("marta")
    page = client.get("/ops").get_data(as_text=True)
    assert 'data-email-failed="1"' in page and "no se pudieron enviar" in page


def test_a_sender_killed_between_the_servers_ok_and_its_record_loses_nothing(mail_app, db, smtp, senders):
    client = mail_app.test_client()
    auth = AuthActions(client)
    _order_waiting(client, auth)
    smtp.set_mode("slow_ack", times=1, delay_s=30)  # kept at once, the 250 held back: the sender waits on it
    first = senders.start()
    wait_until(smtp.messages, timeout=30, message="the sink received nothing")
    senders.kill(first)  # the server has the email; the sender never recorded it
    row = _rows(db)[0]
    assert row["status"] == "PENDIENTE" and row["attempts"] == 1 and row["locked_until"] is not None
    # The dead runner's maintenance lease would pass on within its TTL; the email's own lease is left to expire.
    with db.transaction() as tx:
        tx.execute("UPDATE leader_lease SET expires_at = now() - interval '1 second' WHERE name = 'maintenance'")
        tx.commit()
    senders.start()
    wait_until(lambda: _rows(db, "status = 'ENVIADO'"), timeout=60, message="the email was not sent again")
    deliveries = smtp.messages()
    assert len(deliveries) == 2, "at least once: the email went out again"
    assert deliveries[0]["message_id"] == deliveries[1]["message_id"], "a resend carries the same Message-ID"
    assert _rows(db)[0]["attempts"] == 2


def test_without_smtp_url_nothing_is_queued_and_everything_works(client, auth, db, fakes, relay, smtp, senders):
    order_id, _ = _order_waiting(client, auth)  # the session app: SMTP_URL unset
    auth.login("laura")
    token = csrf_token(client.get("/credit/queue").get_data(as_text=True))
    assert client.post(f"/credit/queue/{order_id}/reject", data={"csrf_token": token, "reason": "No"}).status_code == 303
    fakes.set_mode("fiscal", "error_4xx")
    order = insert_confirmed_orders(db, 1)[0]
    relay.start_workers(1)
    relay.start_sweepers(1)
    wait_until(lambda: dead_letters_of(db, order.fiscal_event_id), timeout=30)
    runner = senders.start(SMTP_URL="")
    wait_until(lambda: "maintenance housekeeping" in senders.log(runner), timeout=30, message=senders.log(runner))
    assert runner.poll() is None
    assert _rows(db) == []
    with db.reading() as conn:
        assert conn.execute("SELECT count(*) AS n FROM dead_letter_announcement").fetchone()["n"] == 0
    assert smtp.messages() == []


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("smtp://nexo:hunter2-secret@mail.example.com:notaport", "port"),
        ("http://nexo:hunter2-secret@mail.example.com", "scheme"),
        ("smtp://nexo:hunter2-secret@", "no host"),
    ],
)
@pytest.mark.no_db
def test_a_malformed_smtp_url_stops_start_up_with_a_clear_message_and_no_password(value, says):
    for module in ("jobs.retention", "jobs.worker"):
        args = [sys.executable, "-m", module] + (["--every", "60"] if module == "jobs.retention" else [])
        done = subprocess.run(
            args, cwd=ROOT, env={**os.environ, "SMTP_URL": value}, capture_output=True, text=True, timeout=60, check=False
        )
        said = done.stdout + done.stderr
        assert done.returncode == 2, said
        assert "SMTP_URL" in said and says in said
        assert "hunter2" not in said and SINK_PASSWORD not in said
