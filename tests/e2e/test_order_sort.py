"""Sorting the order list (ADR-020): by date or by amount, either way (`orden` in the URL), pages by keyset
over (the sort key, id) that lose and repeat no row across equal keys, the sort kept by the next-page link
and the CSV; a bad sort or a page link of another sort is a clear 400."""

from __future__ import annotations

import re
import uuid

import pytest

from nexo.orders import finder
from tests.e2e.test_order_list import SUR, listed, rows_of
from tests.integration.order_helpers import client_id, user_id

# Many equal totals (and, inserted in one statement, one equal created_at for all): only the id orders them.
TOTALS = [50_000] * 9 + [10_000] * 5 + [90_000, 20_000, 70_000] + [30_000] * 4


def insert_orders(db, totals, salesperson="vendedor1") -> None:
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status)"
            " SELECT gen_random_uuid(), %s, 'CEN', %s, 'CONFIRMADO', t, 'PENDIENTE_FACTURACION' FROM unnest(%s::bigint[]) t",
            [client_id(db, SUR), user_id(db, salesperson), totals],
        )
        tx.commit()


def expected(db, sort: str, salesperson: str | None = None) -> list[str]:
    """The ids in the order `sort` promises, worked out here: (key, id) in Python, not SQL's ORDER BY."""
    with db.reading() as conn:
        rows = conn.execute(
            "SELECT o.id, o.total_cents, o.created_at FROM orders o JOIN app_user u ON u.id = o.salesperson_id"
            " WHERE %(seller)s::text IS NULL OR u.username = %(seller)s",
            {"seller": salesperson},
        ).fetchall()
    column = {"fecha": "created_at", "importe": "total_cents"}[sort.split("_", maxsplit=1)[0]]
    rows.sort(key=lambda r: (r[column], r["id"]), reverse=sort.endswith("_desc"))
    return [str(r["id"]) for r in rows]


def walk(client, url: str) -> tuple[list[str], list[str]]:
    """Every row of every page from url on, following the next-page links; and the links followed."""
    seen, links = [], []
    while url:
        html = client.get(url).get_data(as_text=True)
        seen += listed(html)
        found = re.search(r'href="([^"]+)" rel="next"', html)
        url = found.group(1).replace("&amp;", "&") if found else None
        if url:
            links.append(url)
    return seen, links


@pytest.mark.parametrize("sort", ["importe_desc", "importe_asc", "fecha_desc", "fecha_asc"])
def test_every_sort_pages_across_equal_keys_without_losing_or_repeating_a_row(db, client, auth, monkeypatch, sort):
    insert_orders(db, TOTALS)
    monkeypatch.setattr(finder, "PAGE_SIZE", 4)  # pages end inside runs of equal totals
    auth.login("laura")
    seen, links = walk(client, f"/orders/all?orden={sort}")
    assert seen == expected(db, sort) and len(seen) == len(TOTALS) == len(set(seen))
    assert len(links) == 5  # and the next page keeps the sort (the default, newest first, is left out of the URL)
    assert all((f"orden={sort}" in link) == (sort != finder.DEFAULT_SORT) for link in links)


def test_the_first_page_shows_the_biggest_or_the_smallest_first_and_the_chosen_sort(db, client, auth):
    insert_orders(db, TOTALS)
    auth.login("laura")
    with db.reading() as conn:
        biggest, smallest = (
            str(conn.execute(f"SELECT id FROM orders WHERE total_cents = {t}").fetchone()["id"]) for t in (90_000, 20_000)
        )
    desc = client.get("/orders/all", query_string={"orden": "importe_desc"}).get_data(as_text=True)
    asc = client.get("/orders/all", query_string={"orden": "importe_asc"}).get_data(as_text=True)
    assert listed(desc)[0] == biggest and listed(asc).index(smallest) == 5  # after the five of 100,00
    assert '<option value="importe_desc" selected>' in desc and '<option value="importe_asc" selected>' in asc


def test_a_salespersons_own_list_sorts_by_amount_too(db, client, auth, monkeypatch):
    insert_orders(db, TOTALS)
    insert_orders(db, [60_000] * 3, salesperson="vendedor2")  # never on vendedor1's pages
    monkeypatch.setattr(finder, "PAGE_SIZE", 5)
    auth.login("vendedor1")
    seen, _ = walk(client, "/orders?orden=importe_asc")
    assert seen == expected(db, "importe_asc", salesperson="vendedor1")


def test_the_csv_follows_the_sort(db, client, auth):
    insert_orders(db, TOTALS)
    auth.login("laura")
    for sort in ("importe_desc", "importe_asc"):
        rows = rows_of(client.get("/orders.csv", query_string={"orden": sort}))
        totals = [float(r[8]) for r in rows[1:]]
        assert totals == sorted(totals, reverse=sort == "importe_desc") and len(totals) == len(TOTALS)
    html = client.get("/orders/all", query_string={"orden": "importe_asc"}).get_data(as_text=True)
    assert re.search(r'href="/orders\.csv\?[^"]*orden=importe_asc', html)  # the page's CSV link carries it


def test_a_sort_that_does_not_exist_is_a_clear_400(db, client, auth):
    insert_orders(db, TOTALS[:3])
    auth.login("laura")
    answer = client.get("/orders/all", query_string={"orden": "precio"})
    html = answer.get_data(as_text=True)
    assert answer.status_code == 400 and 'data-field="orden"' in html and listed(html) == []
    assert "Elegí un orden de la lista" in html
    assert client.get("/orders.csv", query_string={"orden": "precio"}).status_code == 400


def test_a_page_link_of_one_sort_is_refused_by_another_not_misapplied(db, client, auth, monkeypatch):
    insert_orders(db, TOTALS)
    monkeypatch.setattr(finder, "PAGE_SIZE", 4)
    auth.login("laura")
    html = client.get("/orders/all", query_string={"orden": "importe_desc"}).get_data(as_text=True)
    cursor = re.search(r"desde_pedido=([^&\"]+)", html).group(1)
    for other in ("importe_asc", "fecha_desc", "fecha_asc"):
        answer = client.get("/orders/all", query_string={"orden": other, "desde_pedido": cursor})
        page = answer.get_data(as_text=True)
        assert answer.status_code == 400 and 'data-field="desde_pedido"' in page and listed(page) == []
        assert "es de otro orden de la lista" in page
    # A date cursor forged with an amount in it is refused too, not compared with a date.
    forged = finder.encode_cursor("fecha_desc", {"created_at": 5, "id": uuid.uuid4()})
    assert client.get("/orders/all", query_string={"desde_pedido": forged}).status_code == 400
