"""A salesperson hears what happened to their orders (ADR-020): the menu counts the orders credit decided,
someone else cancelled or the warehouse dispatched since they last opened their list, and the list marks
them once."""

from __future__ import annotations

import re

from tests.e2e.lifecycle_support import as_user, cancel, dispatch, enter, page, received_by_warehouse
from tests.helpers import csrf_token

PLATINO = "Ferretería Platino SA"


def badge(html: str) -> int:
    found = re.search(r'data-nav-badge="orders.list_orders">(\d+)<', html)
    return int(found.group(1)) if found else 0


def news_rows(html: str) -> list[str]:
    return re.findall(r'data-order-row="([0-9a-f-]{36})" data-news', html)


def approve(client, order_id: str) -> None:
    queue = page(client, "/credit/queue")
    answer = client.post(f"/credit/queue/{order_id}/approve", data={"csrf_token": csrf_token(queue), "note": ""})
    assert answer.status_code == 303


def test_a_decision_a_cancel_by_credit_and_a_dispatch_are_news_once(client, auth, db):
    waiting = enter(client, auth, [("COR-200", 5)], client_name=PLATINO)
    to_cancel = enter(client, auth, [("TOR-010", 1)])
    to_ship = enter(client, auth, [("TOR-010", 2)])
    received_by_warehouse(db, to_ship)
    as_user(client, auth, "vendedor1")
    page(client, "/orders")  # seen as they are now
    assert badge(page(client, "/orders/new")) == 0

    as_user(client, auth, "laura")
    approve(client, waiting)
    assert cancel(client, to_cancel).status_code == 303
    as_user(client, auth, "sergio")
    assert dispatch(client, to_ship).status_code == 303

    as_user(client, auth, "vendedor1")
    assert badge(page(client, "/orders/new")) == 3
    listed = page(client, "/orders")
    assert sorted(news_rows(listed)) == sorted([waiting, to_cancel, to_ship]) and "Novedad" in listed
    assert badge(page(client, "/orders/new")) == 0  # opened: no longer news
    assert news_rows(page(client, "/orders")) == []


def test_a_salesperson_cancelling_their_own_order_is_not_news_to_them(client, auth, db):
    order = enter(client, auth, [("TOR-010", 1)])
    as_user(client, auth, "vendedor1")
    page(client, "/orders")
    assert cancel(client, order).status_code == 303
    assert badge(page(client, "/orders/new")) == 0


def test_news_are_each_salespersons_own(client, auth, db):
    theirs = enter(client, auth, [("COR-200", 5)], client_name=PLATINO, salesperson="vendedor2")
    as_user(client, auth, "vendedor1")
    page(client, "/orders")
    as_user(client, auth, "laura")
    approve(client, theirs)
    as_user(client, auth, "vendedor1")
    assert badge(page(client, "/orders/new")) == 0
    as_user(client, auth, "vendedor2")
    assert badge(page(client, "/orders/new")) == 1
