"""Navigation by permission (ADR-021): every link a demo user is shown, followed from the home page through
every page it leads to, opens for that user (no 403, no 404); the owner reads every order and the credit
queue, without the buttons of permissions she lacks."""

from __future__ import annotations

import pytest

from tests.e2e.lifecycle_support import as_user, page
from tests.e2e.page_walk import USERS, morning_with_everything, walk


@pytest.fixture
def morning(client, auth, db) -> dict:
    return morning_with_everything(client, auth, db)


@pytest.mark.parametrize("user", USERS)
def test_every_link_shown_to_a_person_opens_for_them(client, auth, morning, user):
    as_user(client, auth, user)
    pages = walk(client, limit=200)
    refused = {
        url: f"{status}, linked from {where}" for url, (status, _, where) in pages.items() if status not in (200, 302, 303)
    }
    assert refused == {}, f"{user} is shown links that do not open"
    assert len(pages) < 200, "the walk stopped before the end: raise the limit"


def test_the_owner_reads_every_order_and_the_queue_without_deciding(client, auth, morning):
    as_user(client, auth, "marta")
    home = page(client, "/ops")
    assert 'href="/orders/all"' in home and 'href="/credit/queue"' in home  # in her menu
    listed = page(client, "/orders/all")
    for order in morning["orders"]:
        assert f'data-order-row="{order}"' in listed
        order_page = page(client, f"/orders/{order}")
        assert 'href="/orders/new"' not in order_page  # no salesperson's links on someone else's order
    queue = page(client, "/credit/queue")
    assert 'data-order-id="' in queue and "/approve" not in queue and "/reject" not in queue


def test_a_salesperson_cannot_open_the_list_of_everyone_s_orders(client, auth, morning):
    as_user(client, auth, "vendedor1")
    assert client.get("/orders/all").status_code == 403
    assert 'href="/orders/all"' not in page(client, "/orders")
