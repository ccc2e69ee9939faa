"""Finding orders (ADR-020): the list's filters combine and live in the URL, pages by keyset, counts, and
the same list as a streamed CSV; bad filters get a clear 400 and show nothing."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

import pytest

from nexo.formatting import format_order_number
from nexo.orders import finder
from nexo.orders.cancel import CancelOrder, cancel_order
from nexo.orders.service import create_order
from tests.integration.order_helpers import client_id, command, user_id

PLATINO = "Ferretería Platino SA"
SUR = "Corralón del Sur"
OBRAS = "Obras Rápidas SRL"


def new_order(db, lines=(("TOR-010", 1),), **kwargs):
    result = create_order(db, command(db, list(lines), **kwargs))
    assert result.outcome in ("confirmed", "pending_authorization"), result
    return result.order_id


def listed(html: str) -> list[str]:
    return re.findall(r'data-order-row="([0-9a-f-]{36})"', html)


def rows_of(response) -> list[list[str]]:
    text = response.get_data(as_text=True)
    assert text.startswith("\ufeff")
    return list(csv.reader(io.StringIO(text[1:])))


@pytest.fixture
def morning(db):
    """Orders of three clients, two salespeople, several SKUs and states; newest last."""
    ids = {
        "sur_tor": new_order(db, [("TOR-010", 2)], client=SUR),
        "sur_cor": new_order(db, [("COR-200", 1), ("TOR-010", 1)], client=SUR, salesperson="vendedor2"),
        "obras": new_order(db, [("COR-200", 2)], client=OBRAS),
        "platino_pending": new_order(db, [("COR-200", 10)], client=PLATINO),
    }
    ids["cancelled"] = new_order(db, [("CAB-045", 1)], client=SUR)
    cancelled = cancel_order(
        db, CancelOrder(ids["cancelled"], user_id(db, "laura"), "laura", "el cliente llamó", may_cancel_any=True)
    )
    assert cancelled.outcome == "cancelled"
    return ids


def test_credit_sees_every_order_newest_first_and_a_salesperson_only_their_own(db, client, auth, morning):
    auth.login("laura")
    everyone = client.get("/orders/all").get_data(as_text=True)
    assert listed(everyone) == [str(morning[k]) for k in ("cancelled", "platino_pending", "obras", "sur_cor", "sur_tor")]
    assert 'data-order-count="5"' in everyone
    auth.logout()
    auth.login("vendedor2")
    own = client.get("/orders", query_string={"vendedor": user_id(db, "vendedor1")}).get_data(as_text=True)
    assert listed(own) == [str(morning["sur_cor"])]  # the salesperson filter cannot widen a salesperson's view


def test_credit_opening_the_salespeoples_list_is_sent_to_every_order_with_its_filters(client, auth, morning):
    auth.login("laura")
    answer = client.get("/orders?estado=ANULADO")
    assert answer.status_code == 303 and answer.headers["Location"].endswith("/orders/all?estado=ANULADO")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"cliente": "corralón"}, ["cancelled", "sur_cor", "sur_tor"]),
        ({"cliente": "sur", "estado": "ANULADO"}, ["cancelled"]),
        ({"estado": ["CONFIRMADO", "PENDIENTE_AUTORIZACION"]}, ["platino_pending", "obras", "sur_cor", "sur_tor"]),
        ({"sku": "cor-200"}, ["platino_pending", "obras", "sur_cor"]),
        ({"sku": "TOR-010", "cliente": "Corralón del Sur"}, ["sur_cor", "sur_tor"]),
        ({"canal": "formulario", "cliente": "Obras"}, ["obras"]),
        ({"cliente": "nadie se llama así"}, []),
        # As the order form's client lookup: every word, in any order, accents and case aside.
        ({"cliente": "SUR corralon"}, ["cancelled", "sur_cor", "sur_tor"]),
        ({"cliente": "ferreteria"}, ["platino_pending"]),
        ({"cliente": "sur obras"}, []),
        ({"cliente": "100%_"}, []),  # LIKE's own characters are taken literally
    ],
)
@pytest.mark.parametrize("cap", [finder.CLIENT_IDS_CAP, 0], ids=["clients looked up first", "clients by their words"])
def test_filters_combine(db, client, auth, morning, monkeypatch, args, expected, cap):
    # Few matching clients travel to the list's statements as ids, many as the words (finder.matching_clients):
    # the same orders either way.
    monkeypatch.setattr(finder, "CLIENT_IDS_CAP", cap)
    auth.login("laura")
    html = client.get("/orders/all", query_string=args).get_data(as_text=True)
    assert listed(html) == [str(morning[k]) for k in expected]


def test_the_salesperson_and_date_filters(db, client, auth, morning):
    with db.transaction() as tx:  # one order of yesterday (Argentina's day)
        tx.execute("UPDATE orders SET created_at = created_at - interval '1 day' WHERE id = %s", [morning["sur_tor"]])
        tx.commit()
    with db.reading() as conn:
        day = conn.execute(
            "SELECT (created_at AT TIME ZONE 'America/Argentina/Buenos_Aires')::date AS d FROM orders WHERE id = %s",
            [morning["sur_tor"]],
        ).fetchone()["d"]
    auth.login("marta")
    only_that_day = client.get("/orders/all", query_string={"desde": day.isoformat(), "hasta": day.isoformat()})
    assert listed(only_that_day.get_data(as_text=True)) == [str(morning["sur_tor"])]
    since_next = client.get("/orders/all", query_string={"desde": (day + timedelta(days=1)).isoformat()})
    assert str(morning["sur_tor"]) not in listed(since_next.get_data(as_text=True))
    seller2 = client.get("/orders/all", query_string={"vendedor": user_id(db, "vendedor2")}).get_data(as_text=True)
    assert listed(seller2) == [str(morning["sur_cor"])]


def test_pages_follow_by_keyset_and_keep_the_filters(db, client, auth, monkeypatch):
    made = [new_order(db, [("TOR-010", 1)], client=SUR) for _ in range(7)]
    new_order(db, [("TOR-010", 1)], client=OBRAS)  # filtered out on every page
    monkeypatch.setattr(finder, "PAGE_SIZE", 3)
    auth.login("laura")
    seen, url, pages = [], "/orders/all?cliente=Sur", 0
    while url:
        html = client.get(url).get_data(as_text=True)
        seen += listed(html)
        pages += 1
        found = re.search(r'href="([^"]+)" rel="next"', html)
        url = found.group(1).replace("&amp;", "&") if found else None
        assert url is None or "cliente=Sur" in url
    assert seen == [str(i) for i in reversed(made)], (pages, len(seen))
    assert pages == 3


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"desde": "ayer"}, "desde"),
        ({"hasta": "2026-13-01"}, "hasta"),
        ({"desde": "2026-12-02", "hasta": "2026-12-01"}, "hasta"),
        ({"estado": "PERDIDO"}, "estado"),
        ({"numero": "doce"}, "numero"),
        ({"vendedor": "-1"}, "vendedor"),
        ({"canal": "fax"}, "canal"),
        ({"desde_pedido": "not-a-cursor"}, "desde_pedido"),
    ],
)
def test_a_filter_that_cannot_be_read_is_a_clear_400_that_lists_nothing(client, auth, morning, args, field):
    auth.login("laura")
    answer = client.get("/orders/all", query_string=args)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 400 and f'data-field="{field}"' in html and listed(html) == []
    assert client.get("/orders.csv", query_string=args).status_code == 400


def test_people_without_orders_see_no_list(client, auth):
    auth.login("sergio")
    assert client.get("/orders").status_code == 403
    assert client.get("/orders/all").status_code == 403
    assert client.get("/orders.csv").status_code == 403


@pytest.mark.parametrize("cap", [finder.CLIENT_IDS_CAP, 0], ids=["clients looked up first", "clients by their words"])
def test_the_csv_has_the_lists_orders_with_spanish_headers_and_amounts_a_spreadsheet_sums(
    db, client, auth, morning, monkeypatch, cap
):
    monkeypatch.setattr(finder, "CLIENT_IDS_CAP", cap)
    auth.login("laura")
    answer = client.get("/orders.csv", query_string={"cliente": "Corralón"})
    assert answer.status_code == 200 and answer.is_streamed
    assert answer.mimetype == "text/csv" and "attachment" in answer.headers["Content-Disposition"]
    rows = rows_of(answer)
    assert rows[0] == finder_headers()
    assert [r[0] for r in rows[1:]] == [numbered(db, morning[k]) for k in ("cancelled", "sur_cor", "sur_tor")]
    by_number = {r[0]: r for r in rows[1:]}
    sur_tor = by_number[numbered(db, morning["sur_tor"])]
    assert sur_tor[2] == SUR and sur_tor[5] == "Confirmado" and sur_tor[7] == "Formulario"
    assert sur_tor[8] == "300.00"  # two TOR-010 at 150,00: a number, not "$ 300,00"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{2}:\d{2}", sur_tor[1])


def test_the_csv_per_line_and_a_salespersons_own(db, client, auth, morning):
    auth.login("vendedor2")
    rows = rows_of(client.get("/orders.csv", query_string={"por": "linea"}))
    assert [(r[0], r[9], r[11], r[12], r[13]) for r in rows[1:]] == [
        (numbered(db, morning["sur_cor"]), "COR-200", "1", "3200.00", "3200.00"),
        (numbered(db, morning["sur_cor"]), "TOR-010", "1", "150.00", "150.00"),
    ]


@pytest.mark.parametrize(
    "name",
    ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)", "\t=1+1", "\r=1+1"],
    ids=["equals", "plus", "minus", "at", "tab", "carriage-return"],
)
def test_a_client_name_that_looks_like_a_formula_is_written_as_text(db, client, auth, name):
    # OWASP's CSV injection starts: =, +, -, @, tab and carriage return (nexo/orders/order_list.py).
    with db.transaction() as tx:
        tx.execute("UPDATE client SET name = %s WHERE id = %s", [name, client_id(db, OBRAS)])
        tx.commit()
    new_order(db, [("TOR-010", 1)], client=name)
    auth.login("laura")
    rows = rows_of(client.get("/orders.csv"))
    assert rows[1][2] == "'" + name


def test_a_big_export_streams_in_pieces(db, client, auth):
    with db.transaction() as tx:  # 1,200 orders in one statement: the export's size, not order entry, is tested
        tx.execute(
            "INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, billing_status)"
            " SELECT gen_random_uuid(), %s, 'CEN', %s, 'CONFIRMADO', 100 * g, 'PENDIENTE_FACTURACION'"
            " FROM generate_series(1, 1200) g",
            [client_id(db, SUR), user_id(db, "vendedor1")],
        )
        tx.commit()
    auth.login("laura")
    answer = client.get("/orders.csv")
    pieces = list(answer.response)
    assert len(pieces) >= 3  # the header, then 500 rows at a time
    rows = list(csv.reader(io.StringIO("".join(p.decode() if isinstance(p, bytes) else p for p in pieces)[1:])))
    assert len(rows) == 1 + 1200


def finder_headers() -> list[str]:
    from nexo.orders.order_list import ORDER_HEADERS

    return ORDER_HEADERS


def numbered(db, order_id) -> str:
    with db.reading() as conn:
        return format_order_number(conn.execute("SELECT number FROM orders WHERE id = %s", [order_id]).fetchone()["number"])
