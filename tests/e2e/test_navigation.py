"""The menu and the links of the order-life pages offer only pages the person may open: every link each demo
user is shown, from the menu and from the order, warehouse and client pages, answers 200 to that user."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from nexo.formatting import format_order_number
from tests.e2e.lifecycle_support import PLATINO, as_user, cancel, dispatch, enter, page, received_by_warehouse
from tests.integration.order_helpers import client_id

LINK = re.compile(r'<a [^>]*href="(/[^"]*)"')
MENU = re.compile(r"<nav>(.*?)</nav>", re.S)


def links(html: str) -> set[str]:
    return {html_lib.unescape(href) for href in LINK.findall(html) if not href.startswith("/static/")}


@pytest.fixture
def life(client, auth, db) -> dict:
    """An order dispatched in part, a cancelled one, a pending one (Platino's), all by vendedor1."""
    shipped = enter(client, auth, [("COR-200", 3)], client_name=PLATINO)
    received_by_warehouse(db, shipped)
    cancelled = enter(client, auth, [("TOR-010", 2)], client_name=PLATINO)
    assert cancel(client, cancelled).status_code == 303
    pending = enter(client, auth, [("CAB-045", 2)], client_name=PLATINO)
    as_user(client, auth, "sergio")
    assert dispatch(client, shipped, {"COR-200": "1"}).status_code == 303
    return {"orders": [shipped, cancelled, pending], "client": client_id(db, PLATINO)}


@pytest.mark.parametrize("user", ["vendedor1", "vendedor2", "laura", "sergio", "marta"])
def test_every_link_a_person_is_shown_opens_for_them(client, auth, db, life, user):
    as_user(client, auth, user)
    home = client.get("/", follow_redirects=True).get_data(as_text=True)
    menu = links(MENU.search(home).group(1))
    pages = set(menu)
    for url in [f"/orders/{order}" for order in life["orders"]] + [f"/clients/{life['client']}", "/warehouse"]:
        if client.get(url).status_code == 200:
            pages.add(url)
    shown = {url: "the menu" for url in pages}
    for url in pages:
        shown.update({link: url for link in links(page(client, url)) if link not in shown})
    refused = {f"{url} (on {where})": status for url, where in sorted(shown.items()) if (status := opened(client, url)) != 200}
    assert refused == {}, f"{user} is shown links it cannot open"
    if user in ("laura", "marta"):
        assert f"/clients/{life['client']}" in shown  # credit and the owner reach the account from an order


def test_the_warehouse_page_links_no_order_page_sergio_cannot_open(client, auth, db, life):
    as_user(client, auth, "sergio")
    html = page(client, "/warehouse")
    assert not [href for href in links(html) if href.startswith("/orders/")]
    with db.reading() as conn:
        number = conn.execute("SELECT number FROM orders WHERE id = %s", [life["orders"][0]]).fetchone()["number"]
    assert format_order_number(number) in html  # the order is named by its number instead (ADR-020)


def opened(client, url: str) -> int:
    """The status a link ends in; a streamed download (the orders' CSV) is closed in its own request."""
    response = client.get(url, follow_redirects=True)
    response.close()
    return response.status_code
