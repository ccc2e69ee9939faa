"""The credit queue (CU-02) through HTTP: the pages, the decisions, permissions, CSRF and real concurrency."""

from __future__ import annotations

import re
import threading

import pytest

from nexo import demo
from nexo.auth.service import create_user
from tests.e2e.order_forms import form_data, order_id_from
from tests.helpers import DEMO_PASSWORD, csrf_token, http_login
from tests.integration.order_helpers import stock
from tests.integration.test_credit_decisions import assert_consistent, snapshot, wait_for_lock_waiters

PLATINO = "Ferretería Platino SA"


def order_through_form(client, auth, lines, client_name=PLATINO, salesperson="vendedor1") -> str:
    """A salesperson enters an order through POST /orders/new; the officer (laura) is logged in afterwards."""
    auth.logout()
    auth.login(salesperson)
    html = client.get("/orders/new").get_data(as_text=True)
    response = client.post("/orders/new", data=form_data(html, client_name, lines))
    assert response.status_code == 303
    auth.logout()
    auth.login("laura")
    return order_id_from(response.headers["Location"])


def row_of(html: str, order_id: str) -> str:
    """The queue's element for one order (from its data-order-id to the end of its article)."""
    start = html.index(f'data-order-id="{order_id}"')
    return html[start : html.index("</article>", start)]


def attr(fragment: str, name: str) -> str:
    """The value of the first attribute `name` in an HTML fragment."""
    match = re.search(rf'{name}="([^"]*)"', fragment)
    assert match, f"no {name}"
    return match.group(1)


def hidden(fragment: str, name: str) -> str:
    """The value of a hidden input by name."""
    return re.search(rf'name="{name}" value="([^"]*)"', fragment).group(1)


def approve_data(page: str, order_id: str, **extra) -> dict:
    """What the queue's approve form of one order posts."""
    row = row_of(page, order_id)
    return {
        "csrf_token": csrf_token(page),
        "seen_exposure_cents": hidden(row, "seen_exposure_cents"),
        "seen_limit_cents": hidden(row, "seen_limit_cents"),
        **extra,
    }


def queue_ids(html: str) -> list[str]:
    return re.findall(r'<article class="card credit-order" data-order-id="([0-9a-f-]{36})"', html)


def test_an_order_over_the_limit_appears_in_the_queue_with_its_figures(client, auth):
    order_id = order_through_form(client, auth, [("COR-200", 5)])
    response = client.get("/credit/queue")
    assert response.status_code == 200
    row = row_of(response.get_data(as_text=True), order_id)
    assert PLATINO in row and attr(row, "data-client-tier") == "PLATINO"
    assert attr(row, "data-limit-cents") == "100000000"
    assert attr(row, "data-exposure-cents") == "99000000"
    assert attr(row, "data-total-cents") == "1600000"
    assert attr(row, "data-excess-cents") == "600000"  # 990,000 + 16,000 - 1,000,000
    assert "$ 1.000.000,00" in row and "$ 6.000,00" in row
    assert "Vendedor A" in row and 'data-sku="COR-200"' in row
    assert int(attr(row, "data-waiting-s")) >= 0 and attr(row, "data-soft-age-s") != ""


def test_the_queue_is_oldest_first_and_holds_only_pending_orders(client, auth, db):
    newer = order_through_form(client, auth, [("COR-200", 5)])
    older = order_through_form(client, auth, [("COR-200", 20)], client_name="Obras Rápidas SRL")
    within = order_through_form(client, auth, [("COR-200", 1)], client_name="Corralón del Sur")
    with db.transaction() as tx:
        tx.execute("UPDATE orders SET created_at = now() - interval '2 hours 5 minutes' WHERE id = %s", [older])
        tx.commit()
    html = client.get("/credit/queue").get_data(as_text=True)
    assert queue_ids(html) == [older, newer]
    assert within not in html
    assert "espera hace 2 h 05 min" in row_of(html, older)


def test_the_queue_filters_by_client_tier_and_salesperson(client, auth):
    platino = order_through_form(client, auth, [("COR-200", 5)])
    obras = order_through_form(client, auth, [("COR-200", 20)], client_name="Obras Rápidas SRL", salesperson="vendedor2")
    assert queue_ids(client.get("/credit/queue?tier=PLATINO").get_data(as_text=True)) == [platino]
    assert queue_ids(client.get("/credit/queue?tier=regular").get_data(as_text=True)) == [obras]
    page = client.get("/credit/queue").get_data(as_text=True)
    obras_client = re.search(r'<option value="([0-9a-f-]{36})"[^>]*>Obras Rápidas SRL', page).group(1)
    assert queue_ids(client.get(f"/credit/queue?client={obras_client}").get_data(as_text=True)) == [obras]
    vendedor2 = re.search(r'<option value="(\d+)"[^>]*>Vendedor B', page).group(1)
    assert queue_ids(client.get(f"/credit/queue?salesperson={vendedor2}").get_data(as_text=True)) == [obras]
    # A malformed filter is ignored, not an error.
    assert len(queue_ids(client.get("/credit/queue?client=nope&salesperson=x").get_data(as_text=True))) == 2


def test_platinum_rows_name_the_open_rn02_question_and_no_row_shows_an_expiry(client, auth):
    platino = order_through_form(client, auth, [("COR-200", 5)])
    regular = order_through_form(client, auth, [("COR-200", 20)], client_name="Obras Rápidas SRL")
    html = client.get("/credit/queue").get_data(as_text=True)
    assert 'data-open-question="RN-02"' in row_of(html, platino)
    assert 'data-open-question="RN-02"' not in row_of(html, regular)
    for order_id in (platino, regular):
        assert 'data-open-question="RN-07"' in row_of(html, order_id)
        assert "vence el" not in row_of(html, order_id) and "expira" not in row_of(html, order_id)


def test_the_navigation_badge_counts_orders_waiting_for_credit(client, auth):
    order_through_form(client, auth, [("COR-200", 5)])
    order_through_form(client, auth, [("TOR-010", 100)])
    html = client.get("/credit/decided").get_data(as_text=True)
    assert re.search(r'data-nav-badge="credit.queue">2<', html)


def test_the_badge_disappears_instead_of_failing_the_page_when_its_count_fails(client, auth, monkeypatch):
    from nexo.credit import queries, views

    def broken(conn):
        raise RuntimeError("count failed")

    monkeypatch.setattr(queries, "pending_count", broken)
    auth.login("laura")
    response = client.get("/credit/queue")
    assert response.status_code == 200 and "data-nav-badge" not in response.get_data(as_text=True)
    assert views.pending_badge() is None


@pytest.mark.parametrize("username", ["vendedor1", "sergio"])
def test_people_without_credit_permission_get_403_on_every_credit_route(client, auth, username):
    order_id = order_through_form(client, auth, [("COR-200", 5)])
    auth.logout()
    auth.login(username)
    token = csrf_token(client.get("/", follow_redirects=True).get_data(as_text=True))
    assert client.get("/credit/queue").status_code == 403
    assert client.get("/credit/decided").status_code == 403
    assert client.post(f"/credit/queue/{order_id}/approve", data={"csrf_token": token}).status_code == 403
    assert client.post(f"/credit/queue/{order_id}/reject", data={"csrf_token": token, "reason": "no"}).status_code == 403


def test_an_anonymous_visitor_is_sent_to_login(client):
    response = client.get("/credit/queue")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login?next=")


def test_a_decision_without_csrf_token_is_refused_and_changes_nothing(client, auth, db):
    order_id = order_through_form(client, auth, [("COR-200", 5)])
    before = snapshot(db, order_id)
    assert client.post(f"/credit/queue/{order_id}/approve", data={"note": "x"}).status_code == 400
    assert client.post(f"/credit/queue/{order_id}/reject", data={"reason": "x"}).status_code == 400
    assert snapshot(db, order_id) == before


def test_approving_from_the_queue_redirects_303_and_the_salesperson_sees_the_decision(client, auth, db):
    order_id = order_through_form(client, auth, [("COR-200", 5)])
    page = client.get("/credit/queue").get_data(as_text=True)
    response = client.post(
        f"/credit/queue/{order_id}/approve",
        data=approve_data(page, order_id, note="Autorizado por llamada", filters="tier=PLATINO"),
    )
    assert response.status_code == 303 and response.headers["Location"] == "/credit/queue?tier=PLATINO"
    assert order_id not in client.get("/credit/queue").get_data(as_text=True)
    auth.logout()
    auth.login("vendedor1")
    order_page = client.get(f"/orders/{order_id}").get_data(as_text=True)
    assert 'data-order-status="CONFIRMADO"' in order_page
    assert 'data-billing-status="PENDIENTE_FACTURACION"' in order_page
    assert len(re.findall(r"data-event-type=", order_page)) == 2
    assert "Laura (crédito)" in order_page and "Autorizado por llamada" in order_page


def test_rejecting_without_a_reason_is_400_with_a_field_error_and_nothing_changes(client, auth, db):
    order_id = order_through_form(client, auth, [("COR-200", 5)])
    before = snapshot(db, order_id)
    token = csrf_token(client.get("/credit/queue").get_data(as_text=True))
    response = client.post(f"/credit/queue/{order_id}/reject", data={"csrf_token": token, "reason": "   "})
    assert response.status_code == 400
    assert 'data-field-error="reason"' in response.get_data(as_text=True)
    assert snapshot(db, order_id) == before


def test_rejecting_from_the_queue_releases_stock_and_the_salesperson_reads_the_reason(client, auth, db):
    order_id = order_through_form(client, auth, [("COR-118", 1)])
    assert stock(db, "COR-118")["reserved"] == 1
    token = csrf_token(client.get("/credit/queue").get_data(as_text=True))
    response = client.post(f"/credit/queue/{order_id}/reject", data={"csrf_token": token, "reason": "Deuda vencida de 60 días"})
    assert response.status_code == 303 and response.headers["Location"] == "/credit/queue"
    assert stock(db, "COR-118")["reserved"] == 0
    auth.logout()
    auth.login("vendedor1")
    order_page = client.get(f"/orders/{order_id}").get_data(as_text=True)
    assert 'data-order-status="RECHAZADO"' in order_page and "Deuda vencida de 60 días" in order_page


def test_a_changed_exposure_shows_before_and_after_and_a_second_post_approves(client, auth, db):
    first = order_through_form(client, auth, [("COR-200", 5)])
    second = order_through_form(client, auth, [("TOR-010", 100)])
    page = client.get("/credit/queue").get_data(as_text=True)  # both rows seen at 990,000.00
    assert client.post(f"/credit/queue/{first}/approve", data=approve_data(page, first)).status_code == 303
    response = client.post(f"/credit/queue/{second}/approve", data=approve_data(page, second, note="ok"))
    assert response.status_code == 409
    html = response.get_data(as_text=True)
    assert 'data-conflict="figures_changed"' in html
    assert "$ 990.000,00" in html and "$ 1.006.000,00" in html  # before and after
    assert snapshot(db, second)["status"] == "PENDIENTE_AUTORIZACION"
    again = {
        "csrf_token": csrf_token(html),
        "seen_exposure_cents": hidden(html, "seen_exposure_cents"),
        "seen_limit_cents": hidden(html, "seen_limit_cents"),
        "note": "ok",
    }
    assert again["seen_exposure_cents"] == "100600000"
    assert client.post(f"/credit/queue/{second}/approve", data=again).status_code == 303
    assert snapshot(db, second)["status"] == "CONFIRMADO"


def test_deciding_an_order_already_decided_is_409_and_names_who_decided(client, auth):
    order_id = order_through_form(client, auth, [("COR-200", 5)])
    page = client.get("/credit/queue").get_data(as_text=True)
    assert client.post(f"/credit/queue/{order_id}/approve", data=approve_data(page, order_id)).status_code == 303
    response = client.post(f"/credit/queue/{order_id}/reject", data={"csrf_token": csrf_token(page), "reason": "x"})
    assert response.status_code == 409
    assert "ya fue decidido por" in response.get_data(as_text=True)
    assert "Laura (crédito)" in response.get_data(as_text=True)


def test_an_order_whose_reservation_was_released_cannot_be_approved(client, auth, db):
    order_id = order_through_form(client, auth, [("COR-118", 1)])
    with db.transaction() as tx:
        tx.execute(
            "UPDATE stock_level SET reserved = 0 WHERE warehouse_id = 'CEN'"
            " AND product_id = (SELECT id FROM product WHERE sku = 'COR-118')"
        )
        tx.execute("UPDATE stock_reservation SET released_at = now() WHERE order_id = %s", [order_id])
        tx.commit()
    page = client.get("/credit/queue").get_data(as_text=True)
    assert attr(row_of(page, order_id), "data-reservation") == "LIBERADA"
    response = client.post(f"/credit/queue/{order_id}/approve", data=approve_data(page, order_id))
    assert response.status_code == 409
    assert 'data-conflict="reservation_released"' in response.get_data(as_text=True)
    assert snapshot(db, order_id)["status"] == "PENDIENTE_AUTORIZACION"


def test_the_decided_tab_shows_who_decided_what_when_and_why(client, auth):
    approved = order_through_form(client, auth, [("COR-200", 5)])
    rejected = order_through_form(client, auth, [("COR-200", 20)], client_name="Obras Rápidas SRL")
    page = client.get("/credit/queue").get_data(as_text=True)
    client.post(f"/credit/queue/{approved}/approve", data=approve_data(page, approved, note="Cliente histórico"))
    client.post(f"/credit/queue/{rejected}/reject", data={"csrf_token": csrf_token(page), "reason": "Sin garantía"})
    html = client.get("/credit/decided").get_data(as_text=True)
    rows = dict(re.findall(r'<tr data-order-id="([0-9a-f-]{36})" data-decision="(\w+)"', html))
    assert rows == {approved: "CONFIRMADO", rejected: "RECHAZADO"}
    assert re.findall(r'data-decided-by="(\w+)"', html) == ["laura", "laura"]
    assert (
        "Cliente histórico" in html
        and "Sin garantía" in html
        and '$ 990.000,00</span> / <span class="amount">$ 1.000.000,00' in html
    )


# --- Real concurrency: two officers, one order, gunicorn answering both at once -------------------------


def second_officer(db) -> None:
    with db.transaction() as tx:
        create_user(tx.conn, "ines", "Inés (crédito)", demo._password_hash(DEMO_PASSWORD), ["credito"])
        tx.commit()


def order_over_http(base: str) -> str:
    seller = http_login(base, "vendedor1")
    html = seller.get(base + "/orders/new", timeout=10).text
    response = seller.post(
        base + "/orders/new", data=form_data(html, PLATINO, [("COR-118", 1)]), allow_redirects=False, timeout=10
    )
    assert response.status_code == 303
    return order_id_from(response.headers["Location"])


def decide_at_once(db, base: str, order_id: str, decisions: dict) -> dict:
    """Post every officer's decision while the order row is held, so all of them queue on it together."""
    prepared = {}
    for username, (action, data) in decisions.items():
        session = http_login(base, username)
        page = session.get(base + "/credit/queue", timeout=10).text
        body = approve_data(page, order_id, **data) if action == "approve" else {"csrf_token": csrf_token(page), **data}
        prepared[username] = (session, f"{base}/credit/queue/{order_id}/{action}", body)
    answers: dict = {}

    def post(username):
        session, url, body = prepared[username]
        answers[username] = session.post(url, data=body, allow_redirects=False, timeout=30)

    threads = [threading.Thread(target=post, args=(u,)) for u in prepared]
    with db.transaction() as holder:
        holder.execute("SELECT 1 FROM orders WHERE id = %s FOR UPDATE", [order_id])
        for queued, t in enumerate(threads, start=1):
            # One at a time, so they queue on the row in the order given (Postgres serves row-lock
            # waiters first come, first served): each ordering is then tested on purpose, not by luck.
            t.start()
            wait_for_lock_waiters(db, queued)
    for t in threads:
        t.join()
    return answers


def test_two_officers_approving_at_once_get_one_303_and_one_409(live_server, db):
    second_officer(db)
    order_id = order_over_http(live_server)
    answers = decide_at_once(
        db, live_server, order_id, {"laura": ("approve", {"note": "yo"}), "ines": ("approve", {"note": "yo también"})}
    )
    assert sorted(r.status_code for r in answers.values()) == [303, 409]
    loser = next(r for r in answers.values() if r.status_code == 409)
    assert "ya fue decidido por" in loser.text
    state = snapshot(db, order_id)
    assert_consistent(state)
    assert state["status"] == "CONFIRMADO" and state["exposure"] == 99_000_000 + 1_250_000


@pytest.mark.parametrize("first", ["approve", "reject"])
def test_approve_and_reject_at_once_leave_one_consistent_decision(live_server, db, first):
    second_officer(db)
    order_id = order_over_http(live_server)
    decisions = {"laura": ("approve", {}), "ines": ("reject", {"reason": "Sin garantía"})}
    if first == "reject":
        decisions = dict(reversed(decisions.items()))
    answers = decide_at_once(db, live_server, order_id, decisions)
    assert sorted(r.status_code for r in answers.values()) == [303, 409]
    state = snapshot(db, order_id)
    assert_consistent(state)
    assert state["reserved"]["COR-118"] == (1 if state["status"] == "CONFIRMADO" else 0)
