"""Guarantee 13: each of the five signals moves on /ops and on /metrics when its situation is created.

Situations are created the way they happen: real order POSTs where the order flow makes them (a
pending authorization, a request_id_reused conflict through another process), plain SQL where only
time or a remote failure would (a stuck PENDIENTE event, a FALLIDO with its dead letter).
"""

from __future__ import annotations

import dataclasses
import re
import secrets

import pytest

from nexo import create_app
from nexo.telemetry import metrics
from nexo.telemetry.recorder import recorder
from nexo.unknowns import UNKNOWNS
from tests.e2e.order_forms import form_data, request_id_of
from tests.helpers import http_login
from tests.ops_helpers import login_client, make_event, make_order, ops_values, prometheus_values


@pytest.fixture
def marta(app):
    return login_client(app, "marta")


@pytest.fixture
def fresh_samples(db):
    """No order-transaction sample of an earlier test left in this process's buffer or in the table."""
    recorder.flush()
    with db.transaction() as tx:
        tx.execute("DELETE FROM order_transaction_sample")
        tx.commit()


def read(marta):
    """(values on /ops, samples on /metrics) as the owner sees them now."""
    page = marta.get("/ops")
    assert page.status_code == 200
    return ops_values(page.get_data(as_text=True)), prometheus_values(marta.get("/metrics").get_data(as_text=True))


def test_ops_page_is_for_ops_view_only(client, app):
    assert client.get("/ops").status_code == 302
    assert login_client(app, "vendedor1").get("/ops").status_code == 403
    assert login_client(app, "marta").get("/ops").status_code == 200


def test_a_stuck_pending_event_shows_its_age_and_count_per_destination(db, marta):
    page, prom = read(marta)
    assert page[("outbox_pending", "fiscal")] == 0 and page[("outbox_oldest_pending_age_s", "fiscal")] is None
    assert prom[("nexo_outbox_pending_events", 'destination="fiscal"')] == 0

    make_event(db, make_order(db), destination="fiscal", age="2 hours")
    page, prom = read(marta)
    assert page[("outbox_pending", "fiscal")] == 1
    assert 7200 <= page[("outbox_oldest_pending_age_s", "fiscal")] < 7200 + 600
    assert page[("outbox_pending", "warehouse")] == 0
    assert prom[("nexo_outbox_pending_events", 'destination="fiscal"')] == 1
    assert 7200 <= prom[("nexo_outbox_oldest_pending_age_seconds", 'destination="fiscal"')] < 7200 + 600
    assert prom[("nexo_outbox_pending_events", 'destination="warehouse"')] == 0


def test_the_pending_age_chart_is_rebuilt_from_the_outbox(db, marta):
    html = marta.get("/ops").get_data(as_text=True)
    assert "Depósito (entregas), ahora: 0 s" in _chart(html, "pending-age")  # nothing pending: age 0
    make_event(db, make_order(db), destination="warehouse", age="3 hours")
    chart = _chart(marta.get("/ops").get_data(as_text=True), "pending-age")
    assert "<polyline" in chart and "Depósito (entregas), ahora: 3 h 00 min" in chart
    assert "Depósito (entregas), hace 1 h: 2 h 00 min" in chart


def test_a_failed_delivery_counts_per_destination_with_its_dead_letter(db, marta):
    page, prom = read(marta)
    assert page[("outbox_failed", "warehouse")] == 0 and page[("dead_letters_pending", "warehouse")] == 0
    make_event(db, make_order(db), destination="warehouse", status="FALLIDO", last_error="HTTP 500", dead_letter=True)
    page, prom = read(marta)
    assert page[("outbox_failed", "warehouse")] == 1 and page[("dead_letters_pending", "warehouse")] == 1
    assert page[("outbox_failed", "fiscal")] == 0
    assert prom[("nexo_outbox_failed_events", 'destination="warehouse"')] == 1
    assert prom[("nexo_dead_letters_pending", 'destination="warehouse"')] == 1
    assert prom[("nexo_outbox_failed_events", 'destination="fiscal"')] == 0


def test_a_request_id_reused_conflict_in_another_process_shows_on_both(marta, live_server):
    page, prom = read(marta)
    assert page[("request_id_reused_last_hour", None)] == 0
    counter_before = prom.get(("nexo_request_id_reused_total", 'source="order_entry"'), 0)

    seller = http_login(live_server, "vendedor1")  # gunicorn: another process
    html = seller.get(live_server + "/orders/new", timeout=10).text
    first = seller.post(
        live_server + "/orders/new", data=form_data(html, "Corralón del Sur", [("TOR-010", 1)]), allow_redirects=False, timeout=10
    )
    assert first.status_code == 303
    reused = seller.post(
        live_server + "/orders/new",
        allow_redirects=False,
        timeout=10,
        data=form_data(html, "Corralón del Sur", [("TOR-010", 2)], request_id=request_id_of(html)),
    )
    assert reused.status_code == 409

    page, prom = read(marta)
    assert page[("request_id_reused_last_hour", None)] == 1 and page[("request_id_reused_last_24h", None)] == 1
    assert prom[("nexo_request_id_reused_last_hour", "")] == 1
    assert prom[("nexo_request_id_reused_total", 'source="order_entry"')] == counter_before + 1
    assert '<rect class="bar"' in _chart(marta.get("/ops").get_data(as_text=True), "conflicts")


def test_a_pending_authorization_shows_the_order_and_its_soft_reservations(db, app, marta):
    page, prom = read(marta)
    assert page[("orders_pending_authorization", None)] == 0 and page[("soft_reservations", None)] == 0

    seller = login_client(app, "vendedor1")
    html = seller.get("/orders/new").get_data(as_text=True)
    # Ferretería Platino has 10,000.00 of room: 4 × 3,200.00 needs the credit officer (RN-01, RN-02).
    response = seller.post("/orders/new", data=form_data(html, "Ferretería Platino SA", [("COR-200", 4)]))
    assert response.status_code == 303
    with db.transaction() as tx:  # as if it had been waiting since the morning
        tx.execute("UPDATE orders SET created_at = now() - interval '3 hours'")
        tx.execute("UPDATE stock_reservation SET created_at = now() - interval '3 hours'")
        tx.commit()

    page, prom = read(marta)
    assert page[("orders_pending_authorization", None)] == 1 and page[("soft_reservations", None)] == 1
    assert 3 * 3600 <= page[("order_pending_authorization_oldest_age_s", None)] < 3 * 3600 + 600
    assert 3 * 3600 <= page[("soft_reservation_oldest_age_s", None)] < 3 * 3600 + 600
    assert prom[("nexo_orders_pending_authorization", "")] == 1
    assert prom[("nexo_soft_reservations_unresolved", "")] == 1
    assert prom[("nexo_order_pending_authorization_oldest_age_seconds", "")] >= 3 * 3600


def test_order_transaction_durations_give_p50_and_p95(fresh_samples, marta):
    # Orders of other processes (the session's gunicorn) may still be flushing their samples into these
    # windows, so this test follows its own outcome label; tests/integration/test_ops_queries.py checks
    # the window percentiles exactly on a private snapshot.
    label = "probe_" + secrets.token_hex(4)
    for ms in range(10, 101, 10):  # 10 ms … 100 ms, as order entry reports them
        metrics.observe_order_transaction(ms / 1000, label)
    recorder.flush()

    html = marta.get("/ops").get_data(as_text=True)
    outcome = re.search(rf'data-outcome="{label}" data-count="(\d+)" data-p95="([0-9.]+)"', html)
    assert outcome and int(outcome.group(1)) == 10 and float(outcome.group(2)) == pytest.approx(0.0955)
    page, prom = read(marta)
    assert page[("order_transactions", "1h")] >= 10 and page[("order_transaction_p95_s", "1h")] > 0
    assert prom[("nexo_order_transactions", 'window="24h"')] >= 10
    assert prom[("nexo_order_transaction_seconds_count", f'outcome="{label}"')] == 10
    assert prom[("nexo_order_transaction_seconds_sum", f'outcome="{label}"')] == pytest.approx(0.55)
    assert "<circle" in _chart(html, "transaction-p95")


def test_a_real_order_records_its_transaction_duration(fresh_samples, app, db, marta):
    with db.reading() as conn:
        started = conn.execute("SELECT clock_timestamp() AS t").fetchone()["t"]
    seller = login_client(app, "vendedor1")
    html = seller.get("/orders/new").get_data(as_text=True)
    assert seller.post("/orders/new", data=form_data(html, "Corralón del Sur", [("TOR-010", 3)])).status_code == 303
    recorder.flush()
    with db.reading() as conn:
        rows = conn.execute("SELECT outcome, seconds FROM order_transaction_sample WHERE occurred_at >= %s", [started]).fetchall()
    assert [r["outcome"] for r in rows] == ["confirmed"] and rows[0]["seconds"] > 0
    page, _ = read(marta)
    assert page[("order_transactions", "1h")] >= 1 and page[("order_transaction_p95_s", "1h")] > 0


def test_free_text_from_a_destination_is_escaped_on_the_page(db, marta):
    make_event(db, make_order(db), destination="fiscal", last_error='<script>alert("ops")</script><img src=x>')
    html = marta.get("/ops").get_data(as_text=True)
    assert "&lt;script&gt;alert(" in html
    assert "<script>alert(" not in html and "<img src=x>" not in html


def test_ops_page_shows_undefined_thresholds_and_the_whole_register_of_unknowns(marta):
    html = marta.get("/ops").get_data(as_text=True)
    assert 'data-unknown="OPS-THRESHOLDS"' in html and "Umbrales sin definir" in html
    for unknown in UNKNOWNS:
        assert f'data-unknown-key="{unknown.key}"' in html, unknown.key
        assert unknown.question.replace("¿", "") in html.replace("¿", "")
    assert 'data-outbox-retention="undefined"' in html and "sin plazo de guardado decidido" in html


def test_ops_page_shows_a_configured_outbox_retention(settings):
    app = create_app(dataclasses.replace(settings, outbox_retention_days=30), test_config={"TESTING": True})
    try:
        html = login_client(app, "marta").get("/ops").get_data(as_text=True)
        assert 'data-outbox-retention="30"' in html and "30 días" in html
    finally:
        app.extensions["nexo.db"].close()


def _chart(html: str, name: str) -> str:
    start = html.index(f'data-chart="{name}"')
    return html[start : html.index("</figure>", start)]
