"""Print (ADR-021): the warehouse's picking list (oldest first, by deposit, what remains of each line, one sheet per
order) and a print stylesheet that leaves out the menu, "Salir", buttons and forms."""

from __future__ import annotations

import re

from tests.e2e.lifecycle_support import as_user, page, received_by_warehouse
from tests.e2e.page_walk import developer_language, morning_with_everything


def _sheets(html: str) -> list[str]:
    return re.findall(r'data-picking-order="([0-9a-f-]{36})"', html)


def test_the_picking_list_is_oldest_first_by_deposit_with_what_remains(client, auth, db):
    morning = morning_with_everything(client, auth, db)
    shipped, confirmed = morning["orders"][0], morning["orders"][4]
    received_by_warehouse(db, confirmed, ticket="DEP-2")
    as_user(client, auth, "sergio")
    assert 'href="/warehouse/picking"' in page(client, "/warehouse")
    listed = page(client, "/warehouse/picking")
    assert _sheets(listed) == [shipped, confirmed]  # oldest first
    sheet = listed[listed.index(shipped) : listed.index(confirmed)]
    assert re.search(r'data-picking-line="COR-200" data-remaining="2"', sheet)  # 3 ordered, 1 already left
    assert "Cortadora" in sheet or "COR-200" in sheet
    assert _sheets(page(client, "/warehouse/picking?deposit=CEN")) == [shipped, confirmed]
    assert _sheets(page(client, "/warehouse/picking?deposit=NOR")) == []
    assert developer_language(listed) == {}


def test_one_order_s_sheet_opens_for_the_warehouse_only_while_something_remains(client, auth, db):
    morning = morning_with_everything(client, auth, db)
    shipped, cancelled = morning["orders"][0], morning["orders"][1]
    as_user(client, auth, "sergio")
    assert _sheets(page(client, f"/warehouse/orders/{shipped}/picking")) == [shipped]
    assert client.get(f"/warehouse/orders/{cancelled}/picking").status_code == 404
    as_user(client, auth, "vendedor1")
    assert client.get(f"/warehouse/orders/{shipped}/picking").status_code == 403


def test_printing_an_order_leaves_out_the_menu_the_logout_and_every_button(people, client, auth, db):
    morning = morning_with_everything(client, auth, db)
    pending = morning["orders"][2]
    page_ = people.login("vendedor1")
    page_.goto(f"/orders/{pending}")
    assert page_.locator("header.topbar").is_visible() and page_.get_by_role("button", name="Salir").is_visible()
    page_.emulate_media(media="print")
    assert not page_.locator("header.topbar").is_visible()
    assert not page_.get_by_role("button", name="Salir").is_visible()
    assert page_.locator("button:visible").count() == 0
    assert page_.locator("[data-order-lines]").is_visible() and page_.locator("[data-order-status]").first.is_visible()
    assert page_.locator("[data-order-number]").first.is_visible()
    # A document for the client: the warning to the salesperson, the credit policy's open question, the
    # client's tier and the channel the order came through stay on the screen.
    for internal in ("[data-not-confirmed]", "[data-open-question]", "[data-client-tier]", "[data-order-source]"):
        assert not page_.locator(internal).first.is_visible(), internal
    page_.emulate_media(media="screen")
    assert all(page_.locator(s).first.is_visible() for s in ("[data-not-confirmed]", "[data-client-tier]", "[data-order-source]"))
