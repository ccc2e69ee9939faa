"""Read models of the order pages: the form's SKU lookup and selects, an order with its effects, my orders."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from psycopg.rows import DictRow

from nexo.db import Conn, contains_pattern
from nexo.outbox.partitions import settled_since


def clients(conn: Conn) -> list[DictRow]:
    """Clients for the form's select, by name."""
    return conn.execute("SELECT id, name, tier FROM client ORDER BY name").fetchall()


def client_count(conn: Conn) -> int:
    """How many clients there are: the form's select holds them all only up to a limit (client_options)."""
    return conn.execute("SELECT count(*) AS n FROM client").fetchone()["n"]  # type: ignore[index]


def client_by_id(conn: Conn, client_id: UUID) -> DictRow | None:
    """One client (id, name, tier), or None."""
    return conn.execute("SELECT id, name, tier FROM client WHERE id = %s", [client_id]).fetchone()


def every_word(text: str) -> tuple[str, dict[str, str]]:
    """The conditions "search_text holds every word of text" (clients and products both keep one, migrations
    0630 and 0650) and their parameters: one pattern per word that the trigram index answers, the values
    bound, never formatted."""
    words = text.split()
    where = "".join(f" AND search_text LIKE searchable(%(word{i})s)" for i in range(len(words)))
    return where, {f"word{i}": contains_pattern(word) for i, word in enumerate(words)}


def find_clients(conn: Conn, text: str, *, limit: int, offset: int = 0) -> list[DictRow]:
    """Clients whose name holds every word of `text`, in any order, case and accents aside; by name: the
    form's client lookup, read like find_skus's (a trigram index, migration 0650)."""
    where, params = every_word(text)
    return conn.execute(
        f"SELECT id, name, tier FROM client WHERE true{where} ORDER BY name, id LIMIT %(limit)s OFFSET %(offset)s",
        {**params, "limit": limit, "offset": offset},
    ).fetchall()


def client_list_version(conn: Conn) -> UUID | None:
    """The version of the client list the form's select shows (migration 0090); None if it has none."""
    row = conn.execute("SELECT version FROM list_version WHERE list = 'client'").fetchone()
    return row["version"] if row else None


def warehouses(conn: Conn) -> list[DictRow]:
    """Warehouses (code and name) for the form's select."""
    return conn.execute("SELECT id, name FROM warehouse ORDER BY id").fetchall()


# A catalog row: the product, its server price (None: no authoritative price, RN-03) and what is
# available in each warehouse now. Both are looked up per row found (a page, at most a few hundred):
# joined, a page of 50 was enough for the planner to read the whole price list (test_query_plans.py).
_CATALOG_ROW = """
    SELECT p.sku, p.name, (SELECT pl.price_cents FROM price_list pl WHERE pl.product_id = p.id) AS price_cents,
           coalesce((SELECT jsonb_object_agg(s.warehouse_id, s.on_hand - s.reserved)
                       FROM stock_level s WHERE s.product_id = p.id), '{}'::jsonb) AS available
      FROM found p
     ORDER BY p.sku
"""


def find_skus(conn: Conn, text: str, *, limit: int | None, offset: int = 0, after: str | None = None) -> list[DictRow]:
    """Catalog rows whose SKU or name holds every word of text, in any order, case and accents aside; by SKU, one page.

    "200", "cortadora 200" and "ceramica" all find COR-200 ("Cortadora de cerámica 200"); what starts
    with text, as the lookup used to find, is among them. The words are looked up in a trigram index
    (migration 0630): a lookup reads the products that hold them, not the catalog, so a narrow word
    costs the same with 50 or 50,000 SKUs; a word of one or two letters has no trigram, and walks the
    catalog by SKU up to its page instead. Empty text: the catalog from its first SKU. `after` starts
    past that SKU (the API's cursor: no OFFSET to read through); `limit` None is no limit.
    """
    where, params = every_word(text)  # the form and the API send at most 40 characters
    # A plain range when there is a cursor: "IS NULL OR sku > …" would walk the index from its start.
    past = " AND sku > %(after)s" if after is not None else ""
    found = f"SELECT id, sku, name FROM product WHERE true{where}{past} ORDER BY sku LIMIT %(limit)s OFFSET %(offset)s"
    return conn.execute(
        f"WITH found AS ({found}) {_CATALOG_ROW}", {**params, "limit": limit, "offset": offset, "after": after}
    ).fetchall()


def catalog_of(conn: Conn, skus: list[str]) -> list[DictRow]:
    """Catalog rows of these SKUs (the lines a salesperson typed), by SKU; unknown SKUs are absent."""
    return conn.execute(
        f"WITH found AS (SELECT id, sku, name FROM product WHERE sku = ANY(%s)) {_CATALOG_ROW}", [skus]
    ).fetchall()


def order_header(conn: Conn, order_id: UUID) -> DictRow | None:
    """The order with its client, warehouse, salesperson, origin (form or API key), credit decision and cancel, or None."""
    return conn.execute(
        """
        SELECT o.*, c.name AS client_name, c.tier AS client_tier, c.credit_limit_cents, c.exposure_cents,
               w.name AS warehouse_name, s.username AS salesperson_username, s.full_name AS salesperson_name,
               d.username AS decided_by_username, d.full_name AS decided_by_name, k.name AS api_key_name,
               x.full_name AS cancelled_by_name
          FROM orders o
          JOIN client c ON c.id = o.client_id
          JOIN warehouse w ON w.id = o.warehouse_id
          JOIN app_user s ON s.id = o.salesperson_id
          LEFT JOIN app_user d ON d.id = o.decided_by
          LEFT JOIN api_key k ON k.id = o.api_key_id
          LEFT JOIN app_user x ON x.id = o.cancelled_by
         WHERE o.id = %s
        """,
        [order_id],
    ).fetchone()


def order_lines(conn: Conn, order_id: UUID) -> list[DictRow]:
    """The order's lines with the prices charged and how much of each left the warehouse, by SKU."""
    return conn.execute(
        """
        SELECT l.sku, p.name, l.quantity, l.unit_price_cents, l.quantity * l.unit_price_cents AS amount_cents,
               coalesce(r.dispatched, 0) AS dispatched
          FROM order_line l
          JOIN orders o ON o.id = l.order_id
          JOIN product p ON p.id = l.product_id
          LEFT JOIN stock_reservation r
                 ON r.order_id = l.order_id AND r.product_id = l.product_id AND r.warehouse_id = o.warehouse_id
         WHERE l.order_id = %s ORDER BY l.sku
        """,
        [order_id],
    ).fetchall()


def order_shipments(conn: Conn, order_id: UUID) -> list[DictRow]:
    """What left the warehouse for the order, one row per dispatch (who, when, which key, its lines), oldest first."""
    return conn.execute(
        """
        SELECT s.id, s.created_at, u.full_name AS created_by_name, k.name AS api_key_name,
               coalesce((SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
                           FROM shipment_line l WHERE l.shipment_id = s.id), '[]') AS lines
          FROM shipment s
          JOIN app_user u ON u.id = s.created_by
          LEFT JOIN api_key k ON k.id = s.api_key_id
         WHERE s.order_id = %s
         ORDER BY s.created_at, s.id
        """,
        [order_id],
    ).fetchall()


def order_reservations(conn: Conn, order_id: UUID) -> list[DictRow]:
    """The order's stock reservations (kind, quantity, expiry, release), by SKU."""
    return conn.execute(
        """
        SELECT p.sku, r.warehouse_id, r.quantity, r.kind, r.expires_at, r.created_at, r.released_at
          FROM stock_reservation r JOIN product p ON p.id = r.product_id
         WHERE r.order_id = %s ORDER BY p.sku
        """,
        [order_id],
    ).fetchall()


def order_events(conn: Conn, order_id: UUID, *, entered_at: datetime) -> list[DictRow]:
    """The order's outbox events (compensations and withdrawn ones too) with attempts, last error and the latest
    dead letter, if any. `entered_at` is the order's created_at: only the months since are read (ADR-019)."""
    return conn.execute(
        """
        SELECT e.id, e.event_type, e.destination, e.status, e.attempts, e.last_error, e.next_attempt_at,
               e.delivered_at, e.created_at, e.withdrawn_at, e.depends_on,
               dl.status AS dead_letter_status, dl.resolved_by, dl.resolution_note, dl.resolved_at,
               dl.created_at AS dead_letter_at
          FROM outbox_event e
          LEFT JOIN LATERAL (SELECT d.status, d.resolved_by, d.resolution_note, d.resolved_at, d.created_at
                               FROM dead_letter d WHERE d.event_id = e.id
                              ORDER BY d.created_at DESC, d.id DESC LIMIT 1) dl ON true
         WHERE e.aggregate_id = %s AND e.settled_on >= %s ORDER BY e.created_at, e.event_type
        """,
        [order_id, settled_since(entered_at)],
    ).fetchall()


def order_audit(conn: Conn, order_id: UUID) -> list[DictRow]:
    """Audit rows about the order (e.g. the credit decision), oldest first."""
    return conn.execute(
        """
        SELECT occurred_at, actor, action, details FROM audit_log
         WHERE object_type = 'order' AND object_id = %s ORDER BY occurred_at, id
        """,
        [str(order_id)],
    ).fetchall()


def orders_of_salesperson(conn: Conn, salesperson_id: int, limit: int = 200) -> list[DictRow]:
    """The salesperson's own orders, newest first."""
    return conn.execute(
        """
        SELECT o.id, o.number, o.status, o.billing_status, o.total_cents, o.created_at, o.warehouse_id, c.name AS client_name
          FROM orders o JOIN client c ON c.id = o.client_id
         WHERE o.salesperson_id = %s ORDER BY o.created_at DESC, o.id LIMIT %s
        """,
        [salesperson_id, limit],
    ).fetchall()


def order_by_number(conn: Conn, number: int, *, salesperson_id: int | None) -> UUID | None:
    """The id of the order with this number (orders_number_key) — only the salesperson's own when one is
    given — or None (ADR-020)."""
    row = conn.execute(
        "SELECT id FROM orders WHERE number = %s AND (%s::bigint IS NULL OR salesperson_id = %s::bigint)",
        [number, salesperson_id, salesperson_id],
    ).fetchone()
    return None if row is None else row["id"]


def available_credit(conn: Conn, client_id: UUID) -> int | None:
    """The client's credit limit minus its exposure now (a hint for the form; credit decides in create_order)."""
    row = conn.execute(
        "SELECT credit_limit_cents - exposure_cents AS available FROM client WHERE id = %s", [client_id]
    ).fetchone()
    return row["available"] if row else None
