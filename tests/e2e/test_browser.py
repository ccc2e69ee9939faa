"""The salesperson's worst morning in a real browser: Debian's Chromium driven by Playwright.

Everything is real: gunicorn, Postgres, Redis, the RQ relay and the sandboxed fakes. The browser does
what people do (double click, back button, two salespeople at once, Laura's queue, Marta's dead
letters); the database, the server's log and the fakes say what really happened. Each step leaves a
screenshot in test-artifacts/browser/.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.browser_fixtures import fill_order
from tests.relay_fixtures import event_rows, wait_until

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

pytestmark = pytest.mark.browser

ORDER_URL = re.compile(r"/orders/([0-9a-f-]{36})$")  # JavaScript-compatible: expect() runs it in the page
CONFIRM = "Confirmar pedido"


def order_id_of(page) -> str:
    """The order id in the page's URL (the page must be an order page)."""
    match = ORDER_URL.search(page.url)
    assert match, f"not an order page: {page.url}"
    return match[1]


def orders_of_request(db, request_id: str) -> list[dict]:
    """The orders the idempotency key of this form points at."""
    with db.reading() as conn:
        return conn.execute(
            "SELECT o.id, o.status FROM idempotency_keys k JOIN orders o ON o.id = k.order_id WHERE k.request_id = %s",
            [request_id],
        ).fetchall()


def order_count(db) -> int:
    with db.reading() as conn:
        return conn.execute("SELECT count(*) AS n FROM orders").fetchone()["n"]


def open_form(people, username: str):
    """A salesperson's page on a fresh order form."""
    page = people.login(username, next_path="/orders/new")
    expect(page.locator("[data-order-form]")).to_be_visible()
    return page


def test_double_click_on_confirmar_creates_one_order(db, browser_web, people, shots):
    page = open_form(people, "vendedor1")
    request_id = fill_order(page, "Corralón del Sur", [("TOR-010", 3)])
    shots.take(page, "form")

    page.get_by_role("button", name=CONFIRM).dblclick()
    page.wait_for_url(ORDER_URL)
    expect(page.locator("[data-order-status]")).to_have_attribute("data-order-status", "CONFIRMADO")
    shots.take(page, "order")

    [order] = orders_of_request(db, request_id)
    assert str(order["id"]) == order_id_of(page)
    assert order_count(db) == 1
    # nexo.js disabled the button on the first click: the second never left the browser.
    assert browser_web.create_order_outcomes(request_id) == ["confirmed"]


def waiting_on_locks(db) -> int:
    """How many backends of this database are waiting for a row lock right now."""
    with db.reading() as conn:
        return conn.execute(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()["n"]


def test_double_click_without_javascript_still_creates_one_order(db, browser_web, people, shots):
    # The button guard is only JavaScript; the guarantee is the requestId (ADR-005). With JavaScript off
    # both clicks post the same form. Chromium folds two clicks of the same instant into one submission,
    # so the server is made slow the way it is at 9:14 -- the stock row busy in another transaction --
    # and the second click comes while the first POST is still waiting, as a person's would.
    page = people.login("vendedor1", javascript=False, next_path="/orders/new")
    request_id = fill_order(page, "Corralón del Sur", [("TOR-010", 3)])
    shots.take(page, "form")
    # Raw mouse clicks at the button: Playwright's click() would wait for the pending POST first.
    box = page.get_by_role("button", name=CONFIRM).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    posts_before = browser_web.requests_to("POST", "/orders/new")

    with db.transaction() as busy:
        busy.execute(
            "SELECT 1 FROM stock_level s JOIN product p ON p.id = s.product_id"
            " WHERE p.sku = 'TOR-010' AND s.warehouse_id = 'CEN' FOR UPDATE"
        )
        page.mouse.click(x, y)
        wait_until(lambda: waiting_on_locks(db) == 1, timeout=20, message="the first POST waits on the stock row")
        page.mouse.click(x, y)
        wait_until(lambda: waiting_on_locks(db) == 2, timeout=20, message="the second POST waits on the first")
    # Leaving the block rolls the busy transaction back: both POSTs go on. The second click aborted the
    # first navigation, which wait_for_url would report as a failure: poll the URL instead.
    expect(page).to_have_url(ORDER_URL)
    expect(page.locator("[data-order-status]")).to_have_attribute("data-order-status", "CONFIRMADO")
    shots.take(page, "order")
    wait_until(
        lambda: browser_web.requests_to("POST", "/orders/new") == posts_before + 2,
        timeout=20,
        message="gunicorn answered both POSTs",
    )
    assert order_count(db) == 1
    [order] = orders_of_request(db, request_id)
    assert str(order["id"]) == order_id_of(page)
    assert sorted(browser_web.create_order_outcomes(request_id)) == ["confirmed", "replayed"]


def test_back_button_and_confirm_again_shows_the_same_order(db, browser_web, people, shots):
    page = open_form(people, "vendedor1")
    request_id = fill_order(page, "Corralón del Sur", [("COR-200", 2), ("TOR-010", 10)])
    page.get_by_role("button", name=CONFIRM).click()
    page.wait_for_url(ORDER_URL)
    first_id = order_id_of(page)
    expect(page.locator("[data-notice='already_registered']")).to_have_count(0)
    shots.take(page, "order")

    # Back from the back-forward cache (as in a person's Chrome; without that cache see
    # test_order_form_browser.py): the very form that was sent, with its
    # requestId; nexo.js's pageshow handler enables the button nexo.js disabled on submit.
    page.go_back(wait_until="commit")
    expect(page.locator("[data-order-form]")).to_be_visible()
    assert page.locator("input[name=request_id]").input_value() == request_id
    expect(page.locator("input[name='lines-0-sku']")).to_have_value("COR-200")
    submit = page.locator("[data-order-form] button[type=submit]")
    expect(submit).to_be_enabled()
    expect(submit).to_have_text(CONFIRM)  # not still "Enviando…"
    shots.take(page, "back-to-form")

    submit.click()
    page.wait_for_url(ORDER_URL)
    assert order_id_of(page) == first_id
    expect(page.locator("[data-notice='already_registered']")).to_be_visible()
    expect(page.locator("[data-order-status]")).to_have_attribute("data-order-status", "CONFIRMADO")
    shots.take(page, "already-registered")

    assert [str(o["id"]) for o in orders_of_request(db, request_id)] == [first_id]
    assert order_count(db) == 1
    assert browser_web.create_order_outcomes(request_id) == ["confirmed", "replayed"]


def test_914_race_for_the_last_unit_in_two_browsers(db, people, shots):
    pages = {name: open_form(people, name) for name in ("vendedor1", "vendedor2")}
    request_ids = {name: fill_order(page, "Corralón del Sur", [("COR-118", 1)]) for name, page in pages.items()}
    statuses: dict[str, list[int]] = {name: [] for name in pages}
    for name, page in pages.items():
        expect(page.locator("[data-catalog-sku='COR-118'] [data-available='CEN']")).to_have_text("1")
        page.on("response", lambda r, name=name: r.request.method == "POST" and statuses[name].append(r.status))
        shots.take(page, f"{name}-form")

    for page in pages.values():  # both confirm within milliseconds of each other
        page.get_by_role("button", name=CONFIRM).click(no_wait_after=True)
    for page in pages.values():
        expect(page.locator("[data-order-status], [data-reason]").first).to_be_visible()

    winners = [name for name, page in pages.items() if ORDER_URL.search(page.url)]
    assert len(winners) == 1, {name: page.url for name, page in pages.items()}
    [winner] = winners
    [loser] = [name for name in pages if name != winner]
    won, lost = pages[winner], pages[loser]
    expect(won.locator("[data-order-status]")).to_have_attribute("data-order-status", "CONFIRMADO")
    shots.take(won, f"{winner}-confirmed")
    expect(lost.locator("[data-reason='insufficient_stock'][data-sku='COR-118']")).to_be_visible()
    expect(lost.locator("[data-rejected]")).to_be_visible()
    # The same form again, same requestId: a retry is evaluated again, not turned into a new intent.
    assert lost.locator("input[name=request_id]").input_value() == request_ids[loser]
    expect(lost.locator("input[name='lines-0-sku']")).to_have_value("COR-118")
    shots.take(lost, f"{loser}-insufficient-stock")
    assert statuses[winner] == [303] and statuses[loser] == [422]

    [order] = orders_of_request(db, request_ids[winner])
    assert (str(order["id"]), order["status"]) == (order_id_of(won), "CONFIRMADO")
    assert orders_of_request(db, request_ids[loser]) == []
    assert order_count(db) == 1
    with db.reading() as conn:
        stock = conn.execute(
            "SELECT s.on_hand, s.reserved FROM stock_level s JOIN product p ON p.id = s.product_id"
            " WHERE p.sku = 'COR-118' AND s.warehouse_id = 'CEN'"
        ).fetchone()
    assert (stock["on_hand"], stock["reserved"]) == (1, 1)


def test_credit_officer_approves_from_the_queue(db, people, shots):
    seller = open_form(people, "vendedor1")
    # 2 × 3,200.00 + 1 × 8,900.00 = 15,300.00: over the 10,000.00 Platino has left (RN-01).
    request_id = fill_order(seller, "Ferretería Platino SA", [("COR-200", 2), ("CAB-045", 1)])
    seller.get_by_role("button", name=CONFIRM).click()
    seller.wait_for_url(ORDER_URL)
    order_id = order_id_of(seller)
    expect(seller.locator("[data-order-status]")).to_have_attribute("data-order-status", "PENDIENTE_AUTORIZACION")
    expect(seller.locator("[data-not-confirmed]")).to_be_visible()
    expect(seller.locator("[data-total-cents]")).to_have_attribute("data-total-cents", "1530000")
    shots.take(seller, "vendedor1-pending")

    laura = people.login("laura", next_path="/credit/queue")
    card = laura.locator(f"article[data-order-id='{order_id}']")
    expect(card).to_be_visible()
    expect(card.locator("[data-excess-cents]")).to_have_attribute("data-excess-cents", "530000")
    shots.take(laura, "laura-queue")
    card.locator("textarea[name=note]").fill("Cliente de 20 años, autorizado por Marta")
    card.get_by_role("button", name="Autorizar y confirmar").click()
    laura.wait_for_url(re.compile(r"/credit/queue"))
    expect(laura.locator(".flash")).to_contain_text("autorizado y confirmado")
    expect(laura.locator(f"article[data-order-id='{order_id}']")).to_have_count(0)
    shots.take(laura, "laura-queue-after")

    laura.goto(f"/orders/{order_id}")
    expect(laura.locator("[data-order-status]")).to_have_attribute("data-order-status", "CONFIRMADO")
    expect(laura.locator("[data-credit-decision]")).to_contain_text("Cliente de 20 años")
    shots.take(laura, "laura-order")

    seller.reload()
    expect(seller.locator("[data-order-status]")).to_have_attribute("data-order-status", "CONFIRMADO")
    expect(seller.locator("[data-not-confirmed]")).to_have_count(0)
    expect(seller.locator("[data-event-type]")).to_have_count(2)
    shots.take(seller, "vendedor1-confirmed")

    [order] = orders_of_request(db, request_id)
    assert order["status"] == "CONFIRMADO"
    with db.reading() as conn:
        kinds = {r["kind"] for r in conn.execute("SELECT kind FROM stock_reservation WHERE order_id = %s", [order_id]).fetchall()}
    assert kinds == {"FIRME"}


def fiscal_dead_letter(db, order_id: str):
    """The order's fiscal event once it is FALLIDO with its pending dead letter, else None."""
    with db.reading() as conn:
        return conn.execute(
            "SELECT d.id, d.event_id FROM dead_letter d JOIN outbox_event e ON e.id = d.event_id"
            " WHERE e.aggregate_id = %s AND d.destination = 'fiscal' AND d.status = 'pending'"
            " AND e.status = 'FALLIDO'",
            [order_id],
        ).fetchone()


def wait_or_explain(predicate, timeout: float, message: str, explain):
    """wait_until, but a failure also tells what the relay saw (its events and its processes' logs)."""
    try:
        return wait_until(predicate, timeout=timeout, message=message)
    except pytest.fail.Exception:
        pytest.fail(f"{message}: not within {timeout} s\n{explain()}")


def relay_story(db, relay, order_id: str) -> str:
    """The order's outbox events and the tail of every relay process's log, to explain a failure."""
    with db.reading() as conn:
        events = conn.execute(
            "SELECT event_type, status, attempts, last_error, next_attempt_at, locked_until"
            " FROM outbox_event WHERE aggregate_id = %s",
            [order_id],
        ).fetchall()
    logs = "\n".join(
        f"--- {' '.join(proc.args)} (exit {proc.poll()})\n" + "\n".join(relay.log(proc).splitlines()[-15:])
        for proc in relay.procs
    )
    return f"events: {events}\n{logs}"


def test_admin_replays_a_dead_letter(db, fakes, relay, people, shots):
    fakes.set_mode("fiscal", "error_4xx")  # the fiscal provider refuses everything, permanently
    relay.start_workers(1)
    relay.start_sweepers(1)

    seller = open_form(people, "vendedor1")
    fill_order(seller, "Corralón del Sur", [("TOR-010", 4)])
    seller.get_by_role("button", name=CONFIRM).click()
    seller.wait_for_url(ORDER_URL)
    order_id = order_id_of(seller)
    dead = wait_or_explain(
        lambda: fiscal_dead_letter(db, order_id),
        60,
        "the fiscal event in FALLIDO with a pending dead letter",
        lambda: relay_story(db, relay, order_id),
    )
    dead_id, key = dead["id"], str(dead["event_id"])
    seller.reload()
    expect(seller.locator("[data-event-type='billing.intent_recorded']")).to_have_attribute("data-event-status", "FALLIDO")
    shots.take(seller, "vendedor1-fallido")
    fakes.set_mode("fiscal", "ok")

    marta = people.login("marta", next_path="/admin/dead-letters")
    row = marta.locator(f"tr[data-dead-letter-id='{dead_id}']")
    expect(row).to_have_attribute("data-dead-letter-status", "pending")
    shots.take(marta, "marta-list")
    row.get_by_role("link", name=f"#{dead_id}").click()
    marta.wait_for_url(re.compile(rf"/admin/dead-letters/{dead_id}$"))
    expect(marta.locator("[data-event-id]")).to_have_text(key)
    shots.take(marta, "marta-detail")

    marta.get_by_role("button", name="Consultar al destino").click()
    expect(marta.locator("[data-key-check]")).to_have_attribute("data-key-check", "not_applied")
    shots.take(marta, "marta-key-checked")

    marta.locator("form[data-action=replay] textarea[name=note]").fill("El proveedor corrigió su validación")
    marta.locator("form[data-action=replay]").get_by_role("button", name="Reprocesar").click()
    expect(marta.locator(f"section[data-dead-letter-id='{dead_id}']")).to_have_attribute("data-dead-letter-status", "resolved")
    shots.take(marta, "marta-replayed")

    wait_or_explain(
        lambda: event_rows(db, [key])[key]["status"] == "ENTREGADO",
        60,
        "the replayed fiscal event delivered by the relay",
        lambda: relay_story(db, relay, order_id),
    )
    marta.reload()
    expect(marta.locator("[data-event-status]")).to_have_attribute("data-event-status", "ENTREGADO")
    shots.take(marta, "marta-delivered")
    seller.reload()
    expect(seller.locator("[data-event-type='billing.intent_recorded']")).to_have_attribute("data-event-status", "ENTREGADO")
    expect(seller.locator("[data-billing-status]")).to_have_attribute("data-billing-status", "FACTURADO")
    shots.take(seller, "vendedor1-facturado")

    [effect] = [e for e in fakes.effects("fiscal") if e["key"] == key]
    assert effect["deliveries"] == 1  # the refused try applied nothing; the replay applied it once
    assert len(fakes.effects("fiscal")) == 1
