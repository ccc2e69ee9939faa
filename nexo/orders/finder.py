"""Find any order (ADR-020): the filters of the back office's order list and its CSV, read from the URL.

Every filter lives in the query string, so a view can be bookmarked or sent to a colleague; they
combine (AND). The list is sorted by date or by amount (total), either way (`orden`), and pages by keyset
over (the sort key, id) — never OFFSET, which reads every skipped row; the id breaks ties, so orders of
equal totals are neither lost nor repeated across pages. Each filter is served by an index on the grown database
(tests/integration/test_query_plans.py): the number by orders_number_key, a client by orders_client_idx,
a salesperson by orders_salesperson_keyset_idx, a status by orders_status_keyset_idx, a SKU by
order_line_sku_idx, and anything else by orders_created_idx read newest first; sorted by amount, the whole
list by orders_total_keyset_idx and a salesperson's by orders_salesperson_total_idx (migration 0620), read
forwards or backwards.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from psycopg.rows import DictRow

from nexo.db import Conn, Database, array_literal
from nexo.formatting import parse_order_number
from nexo.orders.queries import every_word
from nexo.states import OrderStatus

PAGE_SIZE = 50
COUNT_CAP = 1_000  # past this the list says "más de 1.000": counting a million rows would read them all
MAX_TEXT = 80
MAX_CURSOR = 200  # a cursor this list issued is about 100 characters
LOCAL = ZoneInfo("America/Argentina/Buenos_Aires")  # dates typed by people are days in Argentina
CHANNEL_FORM = "formulario"
# Up to this many clients matching the client filter's words travel to the list's statements as their ids
# (matching_clients); more than that, as the words themselves.
CLIENT_IDS_CAP = 100


@dataclass(frozen=True)
class Sort:
    """One order of the list: the column it reads, its direction, what the next-page link says."""

    column: str
    descending: bool
    next_label: str

    def order_by(self, alias: str = "o") -> str:
        """ORDER BY terms: the key, then the id in the same direction (the tie-break the keyset needs)."""
        way = "DESC" if self.descending else "ASC"
        return f"{alias}.{self.column} {way}, {alias}.id {way}"

    def after(self) -> str:
        """The keyset condition: rows strictly past (key, id) of the previous page's last row."""
        return f"(o.{self.column}, o.id) {'<' if self.descending else '>'} (%(after_key)s, %(after_id)s)"


# The values of `orden` in the URL (Spanish, like the other filters); the first is the default.
SORTS = {
    "fecha_desc": Sort("created_at", True, "Pedidos más antiguos →"),
    "fecha_asc": Sort("created_at", False, "Pedidos más recientes →"),
    "importe_desc": Sort("total_cents", True, "Pedidos de menor importe →"),
    "importe_asc": Sort("total_cents", False, "Pedidos de mayor importe →"),
}
DEFAULT_SORT = "fecha_desc"
SORT_CHOICES = {
    "fecha_desc": "Fecha: más reciente primero",
    "fecha_asc": "Fecha: más antiguo primero",
    "importe_desc": "Importe: mayor primero",
    "importe_asc": "Importe: menor primero",
}


class FilterError(ValueError):
    """A filter that cannot be read; `field` names it, the message says why in Spanish."""

    def __init__(self, name: str, message: str):
        super().__init__(message)
        self.field = name


@dataclass(frozen=True)
class OrderFilters:
    """What the person asked for. Empty means "any"."""

    number: int | None = None
    client_text: str = ""
    client_id: uuid.UUID | None = None  # one client exactly (the API's client_id)
    client_ids: tuple[uuid.UUID, ...] | None = None  # the clients client_text matches, once looked up
    statuses: tuple[OrderStatus, ...] = ()
    salesperson_id: int | None = None
    sku: str = ""
    since: date | None = None
    until: date | None = None
    channel: str = ""  # "" any, "formulario" the browser form, or an API key's id as text
    sort: str = DEFAULT_SORT  # a key of SORTS
    after: tuple[datetime | int, uuid.UUID] | None = field(default=None, compare=False)  # the keyset cursor

    @classmethod
    def from_args(cls, args, *, salesperson_id: int | None = None) -> OrderFilters:
        """Read the query string (a MultiDict); FilterError for the first thing that is not readable.

        `salesperson_id` forces the salesperson (a salesperson sees only their own orders)."""
        typed_number = _text(args, "numero")
        number = parse_order_number(typed_number) if typed_number else None
        if typed_number and number is None:
            raise FilterError("numero", "El número de pedido se escribe así: P-000123.")
        statuses = []
        for raw in args.getlist("estado"):
            if raw.strip():
                try:
                    statuses.append(OrderStatus(raw.strip()))
                except ValueError:
                    raise FilterError("estado", "Ese estado de pedido no existe.") from None
        seller = salesperson_id
        if seller is None and _text(args, "vendedor"):
            if not _text(args, "vendedor").isdigit() or len(_text(args, "vendedor")) > 18:
                raise FilterError("vendedor", "Elegí un vendedor de la lista.")
            seller = int(_text(args, "vendedor"))
        since, until = _day(args, "desde"), _day(args, "hasta")
        if since and until and since > until:
            raise FilterError("hasta", "La fecha «hasta» es anterior a «desde».")
        channel = _text(args, "canal")
        if channel and channel != CHANNEL_FORM and not (channel.isdigit() and len(channel) <= 18):
            raise FilterError("canal", "Elegí un canal de la lista.")
        sort = _text(args, "orden") or DEFAULT_SORT
        if sort not in SORTS:
            raise FilterError("orden", "Elegí un orden de la lista: por fecha o por importe.")
        return cls(
            number=number,
            client_text=_text(args, "cliente"),
            statuses=tuple(dict.fromkeys(statuses)),
            salesperson_id=seller,
            sku=_text(args, "sku").upper(),
            since=since,
            until=until,
            channel=channel,
            sort=sort,
            after=decode_cursor(cursor, sort) if (cursor := (args.get("desde_pedido") or "").strip()[:MAX_CURSOR]) else None,
        )

    def query_args(self) -> dict[str, Any]:
        """The filters as query-string arguments (for links to the next page and to the CSV)."""
        args: dict[str, Any] = {
            "numero": f"{self.number}" if self.number else "",
            "cliente": self.client_text,
            "estado": [str(s) for s in self.statuses],
            "vendedor": self.salesperson_id or "",
            "sku": self.sku,
            "desde": self.since.isoformat() if self.since else "",
            "hasta": self.until.isoformat() if self.until else "",
            "canal": self.channel,
            "orden": "" if self.sort == DEFAULT_SORT else self.sort,
        }
        return {k: v for k, v in args.items() if v not in ("", [], None)}

    @property
    def any(self) -> bool:
        """Whether anything narrows the list (the order does not)."""
        return bool({k: v for k, v in self.query_args().items() if k != "orden"})

    @property
    def ordering(self) -> Sort:
        """How the list is sorted."""
        return SORTS[self.sort]


def _text(args, name: str) -> str:
    return (args.get(name) or "").strip()[:MAX_TEXT]


def _day(args, name: str) -> date | None:
    raw = _text(args, name)
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        raise FilterError(name, "La fecha se escribe así: 2026-12-01.") from None


def encode_cursor(sort: str, row) -> str:
    """The opaque cursor after a row: the sort it belongs to, the row's sort key and its id."""
    key = row[SORTS[sort].column]
    raw = json.dumps([sort, key.isoformat() if isinstance(key, datetime) else key, str(row["id"])]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, sort: str) -> tuple[datetime | int, uuid.UUID]:
    """(sort key, id) of a cursor this list issued for `sort`; FilterError for anything else, a cursor of
    another sort included: its key is a date where an amount is expected, or the other way round, and read
    in another direction it would skip or repeat rows."""
    gone = FilterError("desde_pedido", "Ese enlace de página ya no vale: volvé a la primera página.")
    try:
        tag, key, order_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError):
        raise gone from None
    if tag != sort:
        if isinstance(tag, str) and tag in SORTS:
            raise FilterError("desde_pedido", "Ese enlace de página es de otro orden de la lista: volvé a la primera página.")
        raise gone
    try:  # FilterError is a ValueError: the refusals above stay out of this block
        if SORTS[tag].column == "total_cents":
            if isinstance(key, bool) or not isinstance(key, int) or abs(key) >= 2**63:
                raise gone
            return key, uuid.UUID(order_id)
        return datetime.fromisoformat(key), uuid.UUID(order_id)
    except (ValueError, TypeError, AttributeError):
        raise gone from None


def matching_clients(conn: Conn, f: OrderFilters) -> OrderFilters:
    """The filters with the ids of the clients their client words match, when those are CLIENT_IDS_CAP or fewer.

    Inside one statement the planner guesses how many clients the words match, each word on its own: for a
    name typed whole ("bench 007") it guessed 18 clients where one matched, and on a database of 65,000
    orders counted their orders by reading the whole table (4.8 ms, more as orders grow) rather than that
    client's 300 through orders_client_idx (0.5 ms; docs/performance.md, "The client filter's plan").
    Looked up first, the clients are a list whose length the planner sees. Past the cap the words stay in
    the statement: so many clients hold a good share of the orders, which the list then reads newest first.
    """
    if not f.client_text or f.client_ids is not None:
        return f
    words, params = every_word(f.client_text)
    rows = conn.execute(f"SELECT id FROM client WHERE true{words} LIMIT %(cap)s", params | {"cap": CLIENT_IDS_CAP + 1}).fetchall()
    if len(rows) > CLIENT_IDS_CAP:
        return f
    return replace(f, client_ids=tuple(r["id"] for r in rows))


def where_sql(f: OrderFilters) -> tuple[str, dict[str, Any]]:
    """The filters as a WHERE condition on `orders o` and its named parameters (the API's list uses it too)."""
    clauses: list[str] = ["true"]
    params: dict[str, Any] = {}
    if f.number is not None:
        clauses.append("o.number = %(number)s")
        params["number"] = f.number
    if f.client_ids is not None:
        # unnest, not = ANY: the planner counts the array's elements as unnest's rows and starts from those
        # clients (their orders by orders_client_idx, their names by client_pkey); with = ANY it hashed the
        # whole client table to name them (docs/performance.md, "The client filter's plan").
        clauses.append("o.client_id IN (SELECT unnest(%(client_ids)s::uuid[]))")
        params["client_ids"] = array_literal(f.client_ids)
    elif f.client_text:
        # The clients as the order form's lookup finds them (every word, in any order, case and accents
        # aside), through its trigram index (migration 0650): a plain ILIKE on the name read every client.
        # The orders of the matching clients then come from orders_client_idx.
        words, word_params = every_word(f.client_text)
        clauses.append(f"o.client_id IN (SELECT id FROM client WHERE true{words})")
        params |= word_params
    if f.client_id is not None:
        clauses.append("o.client_id = %(client_id)s")
        params["client_id"] = f.client_id
    if f.statuses:
        clauses.append("o.status = ANY(%(statuses)s::text[])")
        params["statuses"] = [str(s) for s in f.statuses]
    if f.salesperson_id is not None:
        clauses.append("o.salesperson_id = %(seller)s")
        params["seller"] = f.salesperson_id
    if f.sku:
        clauses.append("o.id IN (SELECT order_id FROM order_line WHERE sku = %(sku)s)")
        params["sku"] = f.sku
    if f.since:
        clauses.append("o.created_at >= %(since)s")
        params["since"] = datetime.combine(f.since, time.min, LOCAL)
    if f.until:
        clauses.append("o.created_at < %(until)s")
        params["until"] = datetime.combine(f.until + timedelta(days=1), time.min, LOCAL)
    if f.channel == CHANNEL_FORM:
        clauses.append("o.api_key_id IS NULL")
    elif f.channel:
        clauses.append("o.api_key_id = %(key)s")
        params["key"] = int(f.channel)
    return " AND ".join(clauses), params


_COLUMNS = """o.id, o.number, o.status, o.billing_status, o.total_cents, o.created_at, o.warehouse_id, o.news_at,
              c.name AS client_name, u.full_name AS salesperson_name, k.name AS api_key_name"""
_JOINS = """JOIN client c ON c.id = o.client_id
            JOIN app_user u ON u.id = o.salesperson_id
            LEFT JOIN api_key k ON k.id = o.api_key_id"""


def page(conn: Conn, f: OrderFilters, *, size: int | None = None) -> tuple[list[DictRow], str | None]:
    """One page (PAGE_SIZE rows unless told) in the filters' order, and the cursor of the next page (None on the last)."""
    size = size or PAGE_SIZE
    where, params = where_sql(f)
    if f.after is not None:
        where += " AND " + f.ordering.after()
        params |= {"after_key": f.after[0], "after_id": f.after[1]}
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM orders o {_JOINS} WHERE {where} ORDER BY {f.ordering.order_by()} LIMIT %(limit)s",
        params | {"limit": size + 1},
    ).fetchall()
    more = len(rows) > size
    rows = rows[:size]
    return rows, encode_cursor(f.sort, rows[-1]) if more else None


def count(conn: Conn, f: OrderFilters) -> int:
    """How many orders match, counted up to COUNT_CAP + 1 (more than the cap reads as "más de")."""
    where, params = where_sql(f)
    row = conn.execute(
        # In the list's order, so the count reads the index that serves the list: a plain LIMIT lets the
        # planner pick a sequential scan that, for a filter matching few orders, reads the whole table.
        f"SELECT count(*) AS n FROM (SELECT 1 FROM orders o WHERE {where}"
        f" ORDER BY {f.ordering.order_by()} LIMIT %(cap)s) AS matching",
        params | {"cap": COUNT_CAP + 1},
    ).fetchone()
    return 0 if row is None else row["n"]


def stream_rows(db: Database, f: OrderFilters, *, per_line: bool, batch: int = 2_000) -> Iterator[DictRow]:
    """Every matching order (or every line of them) in the list's order, read in batches by a server-side
    cursor: a 100,000-row export never sits in memory, on either side."""
    with db.reading() as conn:
        where, params = where_sql(matching_clients(conn, f))
        if per_line:
            sql = (
                f"SELECT {_COLUMNS}, l.sku, p.name AS product_name, l.quantity, l.unit_price_cents,"
                " l.quantity * l.unit_price_cents AS amount_cents"
                f" FROM orders o {_JOINS} JOIN order_line l ON l.order_id = o.id JOIN product p ON p.id = l.product_id"
                f" WHERE {where} ORDER BY {f.ordering.order_by()}, l.sku"
            )
        else:
            sql = f"SELECT {_COLUMNS} FROM orders o {_JOINS} WHERE {where} ORDER BY {f.ordering.order_by()}"
        with conn.cursor(name="orders_export") as cursor:
            cursor.itersize = batch
            cursor.execute(sql, params)
            yield from cursor


def salespeople(conn: Conn) -> list[DictRow]:
    """The people who can enter orders, for the salesperson filter."""
    return conn.execute(
        "SELECT DISTINCT u.id, u.full_name FROM app_user u JOIN user_role r ON r.user_id = u.id"
        " WHERE r.role_name = 'ventas' ORDER BY u.full_name"
    ).fetchall()


def api_keys(conn: Conn) -> list[DictRow]:
    """The API keys, for the channel filter."""
    return conn.execute("SELECT id, name FROM api_key ORDER BY name").fetchall()


# --- what is new for a salesperson (ADR-020, migration 0412) ----------------------------------------------

NEWS_CAP = 99  # the menu says "99+" past this


def news_count(conn: Conn, salesperson_id: int) -> int:
    """How many of the salesperson's orders changed (decided, cancelled by someone else, dispatched) since
    they last opened their list, up to NEWS_CAP + 1 (orders_news_idx)."""
    row = conn.execute(
        "SELECT count(*) AS n FROM (SELECT 1 FROM orders o JOIN app_user u ON u.id = o.salesperson_id"
        " WHERE o.salesperson_id = %(me)s AND o.news_at IS NOT NULL AND o.news_at > u.orders_seen_at"
        " ORDER BY o.news_at DESC LIMIT %(cap)s) AS new",
        {"me": salesperson_id, "cap": NEWS_CAP + 1},
    ).fetchone()
    return 0 if row is None else row["n"]


def seen_until(conn: Conn, salesperson_id: int) -> datetime | None:
    """When the salesperson last opened their list."""
    row = conn.execute("SELECT orders_seen_at FROM app_user WHERE id = %s", [salesperson_id]).fetchone()
    return None if row is None else row["orders_seen_at"]


def mark_seen(conn: Conn, salesperson_id: int) -> None:
    """The salesperson has seen their list now: the menu's count starts again from here."""
    conn.execute("UPDATE app_user SET orders_seen_at = now() WHERE id = %s", [salesperson_id])
