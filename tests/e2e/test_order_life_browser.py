"""An order's life in a real browser (guarantee 19): Sergio dispatches part and then the rest from the form's own
defaults, a salesperson cancels from the order page (the browser refuses an empty reason before sending it), Laura
records a payment written as people write pesos. Real gunicorn, Postgres, Redis, relay workers and fakes."""

from __future__ import annotations

import re

import pytest

from tests.e2e.browser_fixtures import fill_order
from tests.relay_fixtures import order_row, wait_until

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ORDER_URL = re.compile(r"/orders/([0-9a-f-]{36})$")


def enter_order(people, lines, client="Corralón del Sur"):
    seller = people.login("vendedor1", next_path="/orders/new")
    fill_order(seller, client, lines)
    seller.get_by_role("button", name="Confirmar pedido").click()
    seller.wait_for_url(ORDER_URL)
    return seller, ORDER_URL.search(seller.url)[1]


def test_dispatch_in_two_steps_cancel_and_a_payment_in_the_browser(db, people, shots, browser_web, fakes, relay):
    relay.start_workers(1)
    seller, order_id = enter_order(people, [("COR-200", 3), ("TOR-010", 10)])
    ticket = wait_until(lambda: order_row(db, order_id)["handoff_ticket"], message="the handoff reached the warehouse")

    sergio = people.login("sergio", next_path="/warehouse")
    card = sergio.locator(f"article[data-dispatch-order='{order_id}']")
    expect(card).to_contain_text(ticket)
    expect(card.locator("input[name$='-quantity']").first).to_have_value("3")  # what remains, by default
    card.locator("tr[data-dispatch-line='COR-200'] input[name$='-quantity']").fill("1")
    card.locator("tr[data-dispatch-line='TOR-010'] input[name$='-quantity']").fill("")  # stays for now
    shots.take(sergio, "sergio-part")
    card.get_by_role("button", name="Registrar lo que sale").click()
    expect(sergio.locator(".flash")).to_contain_text("Despacho registrado: 1 × COR-200")
    expect(sergio.locator(f"tr[data-shipment-order='{order_id}'] [data-order-status]")).to_have_attribute(
        "data-order-status", "DESPACHADO_PARCIAL"
    )
    card = sergio.locator(f"article[data-dispatch-order='{order_id}']")
    expect(card.locator("tr[data-dispatch-line='COR-200'] input[name$='-quantity']")).to_have_value("2")
    card.get_by_role("button", name="Registrar lo que sale").click()  # the rest, as drawn
    expect(sergio.locator(".flash")).to_contain_text("Salió todo el pedido")
    expect(sergio.locator(f"article[data-dispatch-order='{order_id}']")).to_have_count(0)
    shots.take(sergio, "sergio-done")
    assert order_row(db, order_id)["status"] == "DESPACHADO"

    seller.reload()
    expect(seller.locator("[data-order-status]")).to_have_attribute("data-order-status", "DESPACHADO")
    expect(seller.locator("[data-timeline-kind='dispatched']")).to_have_count(2)
    expect(seller.locator("[data-cancel-form]")).to_have_count(0)

    seller, other = enter_order(people, [("CAB-045", 2)])
    seller.get_by_role("button", name="Anular el pedido").click()  # no reason: the browser keeps the form
    assert browser_web.requests_to("POST", f"/orders/{other}/cancel") == 0
    seller.locator("[data-cancel-form] textarea[name=reason]").fill("el cliente llamó para anularlo")
    seller.get_by_role("button", name="Anular el pedido").click()
    expect(seller.locator(".flash")).to_contain_text("Se liberó la reserva de 2 × CAB-045")
    expect(seller.locator("[data-order-status]")).to_have_attribute("data-order-status", "ANULADO")
    expect(seller.locator("[data-timeline-kind='cancelled']")).to_contain_text("el cliente llamó para anularlo")
    shots.take(seller, "vendedor1-cancelled")

    laura = people.login("laura", next_path="/credit/queue")
    laura.goto(f"/orders/{other}")
    laura.locator("[data-client-link]").click()
    before = int(laura.locator("[data-exposure-cents]").get_attribute("data-exposure-cents"))
    form = laura.locator("[data-payment-form]")
    form.locator("input[name=amount]").fill("1.234,56")
    form.locator("input[name=reference]").fill("transferencia 4471")
    form.get_by_role("button", name="Registrar el pago").click()
    expect(laura.locator(".flash")).to_contain_text("Pago de $ 1.234,56 registrado")
    expect(laura.locator("[data-exposure-cents]")).to_have_attribute("data-exposure-cents", str(before - 123_456))
    shots.take(laura, "laura-client")
