"""The order form in a real browser (Debian's Chromium): "Agregar línea" works under the CSP, and so does submit.

Uses the shared browser fixtures of tests/e2e/browser_fixtures.py (one Chromium for the session).
"""

from __future__ import annotations

import re

import pytest

from tests.integration.order_helpers import count

pytestmark = pytest.mark.browser


def test_add_line_button_adds_a_row_and_the_order_goes_through(people, db):
    page = people.login("vendedor1")
    refused = []  # a CSP refusal of our own script would show up here
    page.on("console", lambda msg: refused.append(msg.text) if "Content Security Policy" in msg.text else None)
    page.goto("/orders/new")
    assert page.locator("[data-line-row]").count() == 5
    page.click("[data-add-line]")
    assert page.locator("[data-line-row]").count() == 6
    page.select_option("select[name=client_id]", label="Corralón del Sur · Regular")
    page.select_option("select[name=deposit_id]", value="CEN")
    page.fill("input[name=lines-5-sku]", "cab-045")  # the added row is a real form row
    page.fill("input[name=lines-5-quantity]", "40")
    page.click("button[data-disable-on-submit]")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}$"))
    assert page.locator("[data-order-status]").get_attribute("data-order-status") == "CONFIRMADO"
    assert refused == []
    assert count(db, "SELECT count(*) FROM order_line WHERE sku = 'CAB-045' AND quantity = 40") == 1


def test_back_without_back_forward_cache_keeps_the_request_id_and_confirming_again_replays(people, browser_without_bfcache, db):
    # Without a back-forward cache, Back reloads /orders/new and the server hands out a new requestId;
    # static/orders.js puts back the one this history entry submitted (ADR-005).
    page = people.login("vendedor1", next_path="/orders/new", browser=browser_without_bfcache)
    page.goto("/orders/new")
    page.select_option("select[name=client_id]", label="Corralón del Sur · Regular")
    page.select_option("select[name=deposit_id]", value="CEN")
    page.fill("input[name=lines-0-sku]", "CAB-045")
    page.fill("input[name=lines-0-quantity]", "40")
    request_id = page.locator("input[name=request_id]").input_value()
    page.click("button[data-disable-on-submit]")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}$"))
    first_url = page.url

    page.go_back()
    page.wait_for_selector("[data-order-form]")
    assert page.locator("input[name=request_id]").input_value() == request_id
    page.select_option("select[name=client_id]", label="Corralón del Sur · Regular")  # as typed before
    page.select_option("select[name=deposit_id]", value="CEN")
    page.fill("input[name=lines-0-sku]", "CAB-045")
    page.fill("input[name=lines-0-quantity]", "40")
    page.click("button[data-disable-on-submit]")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}$"))
    assert page.url == first_url
    assert page.locator("[data-notice='already_registered']").count() == 1
    assert count(db, "SELECT count(*) FROM orders") == 1


def test_a_new_form_opened_from_the_menu_gets_its_own_request_id(people):
    page = people.login("vendedor1", next_path="/orders/new")
    page.goto("/orders/new")
    first = page.locator("input[name=request_id]").input_value()
    page.select_option("select[name=client_id]", label="Corralón del Sur · Regular")
    page.select_option("select[name=deposit_id]", value="CEN")
    page.fill("input[name=lines-0-sku]", "COR-200")
    page.fill("input[name=lines-0-quantity]", "1")
    page.click("button[data-disable-on-submit]")
    page.wait_for_url(re.compile(r"/orders/[0-9a-f-]{36}$"))
    page.click("text=Nuevo pedido")
    page.wait_for_selector("[data-order-form]")
    assert page.locator("input[name=request_id]").input_value() != first
