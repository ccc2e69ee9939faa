"""Years of history loaded by set-based SQL: what a distributor's database holds after using Nexo.

Used by the bench's growth phase (about 1,000,000 orders) and, much smaller, by the test
that EXPLAINs every hot query (tests/integration/test_query_plans.py). One INSERT … SELECT per table:
no Python loop, no row-by-row round trip. Ids are sequential UUIDs (a table tag, then the row number),
so every B-tree grows at its right edge and the ids can be computed instead of looked up.

The shape: orders spread evenly over the last three years, two lines each with their reservations,
one idempotency key each; a confirmed order has its two outbox events, delivered; some events failed
and have a dead letter (almost all resolved by a replay, or discarded; the last few still pending),
with their failed attempts; rejected orders have a credit decision and released soft reservations.
The settled events are filed by month as the maintenance runner would have filed them over the years
(ADR-019): each in its month's partition with its attempts, written there at once rather than moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from nexo.outbox import history

SPAN = "3 years"  # the orders' created_at are spread evenly over this span
PENDING_DEAD_LETTERS = 100  # the newest dead letters still wait for a decision
WAITING_SPAN = 140  # one in seven of the newest this many orders waits for credit: 20, the queue's whole content
FAILED_ATTEMPTS = 8  # attempts of an event that reached FALLIDO (RELAY_MAX_ATTEMPTS' default)


@dataclass(frozen=True)
class Volume:
    """How much history to load."""

    orders: int
    dead_letters: int
    clients: int
    skus: int


FULL = Volume(orders=1_000_000, dead_letters=100_000, clients=10_000, skus=50_000)


def _uuid(tag: int, n: str) -> str:
    # A UUID whose first 8 hex digits name the table and the last 24 the row number: sequential, so
    # inserts append to the index, and computable, so a line finds its order without a join.
    return f"(lpad(to_hex({tag}), 8, '0') || lpad(to_hex({n}), 24, '0'))::uuid"


TAGS = {"client": 1, "product": 2, "order": 3, "key": 4, "event": 5}  # + 16 per generation (load's docstring)

# Every statement sees %(orders)s, %(clients)s, %(skus)s, %(step)s (one dead letter every `step` orders)
# and the span; i is the order number (1 = the oldest), k the line or event number within it (0, 1).
_ORDER_AT = "now() - %(span)s::interval * (1 - i::float8 / %(orders)s)"
_PRODUCT_N = "(1 + (i * 31 + {k} * 17) %% %(skus)s)"
_PRICE = "(10000 + ({p} %% 97) * 500)"  # the price list's formula, below
_STATUS = (
    "CASE WHEN i %% 500 = 0 THEN 'RECHAZADO'"
    " WHEN i > %(orders)s - %(waiting_span)s AND i %% 7 = 0 THEN 'PENDIENTE_AUTORIZACION' ELSE 'CONFIRMADO' END"
)
_DEAD = "(i %% %(step)s = 3 %% %(step)s AND i %% 500 <> 0 AND NOT (i > %(orders)s - %(waiting_span)s AND i %% 7 = 0))"
_DEAD_K = "((i / %(step)s) %% 2)"  # which of the two events failed
# Where the maintenance runner would have filed an event (nexo/outbox/history.py): a delivery over its
# FILE_AFTER_S ago goes to the day's month; anything else (failed, or delivered within it) stays live.
_SETTLED_ON = (
    f"CASE WHEN {{status}} = 'ENTREGADO' AND ({{delivered_at}}) < now() - interval '{history.FILE_AFTER_S} seconds'"
    " THEN (({delivered_at}) AT TIME ZONE 'UTC')::date ELSE '9999-12-31'::date END"
)
# A dead letter's event's day: a resolved one's event was replayed and delivered a day later, the others
# stay FALLIDO (the events' statement below).
_DEAD_LETTER_SETTLED_ON = _SETTLED_ON.format(
    status="CASE s WHEN 'resolved' THEN 'ENTREGADO' END", delivered_at="at + interval '1 day'"
)
_DISCARDED = "((i / %(step)s) %% 5 = 0)"  # one dead letter in five was discarded


def _sku_prefix(generation: int) -> str:
    return "GRW-" if generation == 0 else f"GR{generation}-"


def statements(generation: int = 0) -> list[tuple[str, str]]:
    """The INSERT … SELECTs of one generation of history (see load), as (table, SQL) in load order."""
    CLIENT, PRODUCT, ORDER, KEY, EVENT = (tag + 16 * generation for tag in TAGS.values())
    sku = _sku_prefix(generation)
    client_name = "Cliente " if generation == 0 else f"Cliente {generation}-"
    clients = f"client_id BETWEEN {_uuid(CLIENT, '0')} AND {_uuid(CLIENT, '%(clients)s::bigint')}"
    products = f"product_id BETWEEN {_uuid(PRODUCT, '0')} AND {_uuid(PRODUCT, '%(skus)s::bigint')}"
    return [
        (
            "client",
            f"""
            INSERT INTO client (id, name, tier, credit_limit_cents, opening_exposure_cents)
            SELECT {_uuid(CLIENT, "n")}, '{client_name}' || lpad(n::text, 5, '0') || ' ' ||
                   (ARRAY['Ferretería', 'Corralón', 'Obras', 'Sanitarios', 'Pinturería'])[1 + n %% 5],
                   CASE WHEN n %% 20 = 0 THEN 'PLATINO' ELSE 'REGULAR' END, 1000000000000000, 0
              FROM generate_series(1, %(clients)s) AS n""",
        ),
        (
            "product",
            f"""
            INSERT INTO product (id, sku, name)
            SELECT {_uuid(PRODUCT, "n")}, '{sku}' || lpad(n::text, 6, '0'),
                   (ARRAY['Tornillo', 'Cable', 'Caño', 'Codo', 'Llave', 'Cemento', 'Pintura', 'Tuerca', 'Bisagra',
                          'Cerámica'])[1 + n %% 10] || ' modelo ' || n
              FROM generate_series(1, %(skus)s) AS n""",
        ),
        (
            "price_list",
            f"""
            INSERT INTO price_list (product_id, price_cents)
            SELECT {_uuid(PRODUCT, "n")}, {_PRICE.format(p="n")} FROM generate_series(1, %(skus)s) AS n""",
        ),
        (
            "stock_level",
            f"""
            INSERT INTO stock_level (product_id, warehouse_id, on_hand, opening_on_hand)
            SELECT {_uuid(PRODUCT, "n")}, w, 1000000000, 1000000000
              FROM generate_series(1, %(skus)s) AS n, unnest(ARRAY['CEN', 'NOR']) AS w""",
        ),
        (
            "orders",
            f"""
            INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, charged_cents, billing_status,
                                invoice_number, handoff_ticket, created_at, decided_at, decided_by, decision_note)
            SELECT {_uuid(ORDER, "i")}, {_uuid(CLIENT, "(1 + (i::bigint * 7919) %% %(clients)s)")},
                   CASE WHEN i %% 3 = 0 THEN 'NOR' ELSE 'CEN' END,
                   (%(sellers)s::bigint[])[1 + i %% cardinality(%(sellers)s::bigint[])], status,
                   total, CASE status WHEN 'CONFIRMADO' THEN total ELSE 0 END,
                   CASE status WHEN 'CONFIRMADO' THEN 'FACTURADO' ELSE 'NO_APLICA' END,
                   CASE status WHEN 'CONFIRMADO' THEN 'F-' || i END, CASE status WHEN 'CONFIRMADO' THEN 'T-' || i END,
                   at, CASE WHEN status = 'RECHAZADO' OR i %% 500 = 250 THEN at + interval '1 hour' END,
                   CASE WHEN status = 'RECHAZADO' OR i %% 500 = 250 THEN %(officer)s::bigint END,
                   CASE WHEN status = 'RECHAZADO' THEN 'Excede el crédito' END
              FROM generate_series(1, %(orders)s) AS i,
                   LATERAL (SELECT {_STATUS} AS status, {_ORDER_AT} AS at,
                                   (1 + i %% 5) * {_PRICE.format(p=_PRODUCT_N.format(k=0))}
                                     + (1 + i %% 3) * {_PRICE.format(p=_PRODUCT_N.format(k=1))} AS total) AS o""",
        ),
        (
            "order_line",
            f"""
            INSERT INTO order_line (order_id, product_id, sku, quantity, unit_price_cents)
            SELECT {_uuid(ORDER, "i")}, {_uuid(PRODUCT, "p")}, '{sku}' || lpad(p::text, 6, '0'),
                   CASE k WHEN 0 THEN 1 + i %% 5 ELSE 1 + i %% 3 END, {_PRICE.format(p="p")}
              FROM generate_series(1, %(orders)s) AS i, generate_series(0, 1) AS k,
                   LATERAL (SELECT {_PRODUCT_N.format(k="k")} AS p) AS x""",
        ),
        (
            "stock_reservation",
            f"""
            INSERT INTO stock_reservation (order_id, product_id, warehouse_id, quantity, kind, created_at, released_at)
            SELECT {_uuid(ORDER, "i")}, {_uuid(PRODUCT, _PRODUCT_N.format(k="k"))},
                   CASE WHEN i %% 3 = 0 THEN 'NOR' ELSE 'CEN' END,
                   CASE k WHEN 0 THEN 1 + i %% 5 ELSE 1 + i %% 3 END,
                   CASE WHEN {_STATUS} = 'CONFIRMADO' THEN 'FIRME' ELSE 'BLANDA' END, {_ORDER_AT},
                   CASE WHEN {_STATUS} = 'RECHAZADO' THEN {_ORDER_AT} + interval '1 hour' END
              FROM generate_series(1, %(orders)s) AS i, generate_series(0, 1) AS k""",
        ),
        (
            "idempotency_keys",
            f"""
            INSERT INTO idempotency_keys (request_id, request_hash, order_id, created_at)
            SELECT {_uuid(KEY, "i")}, md5(i::text), {_uuid(ORDER, "i")}, {_ORDER_AT}
              FROM generate_series(1, %(orders)s) AS i""",
        ),
        # A confirmed order's two events. The payload has create_order's shape, shortened to what the
        # pages read (the detail page shows it; nothing lists it).
        (
            "outbox_event",
            f"""
            INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, attempts,
                                      cycle_started_attempts, next_attempt_at, created_at, delivered_at, settled_on)
            SELECT id, aggregate_id, event_type, destination, payload, status, attempts, cycle_started_attempts,
                   next_attempt_at, created_at, delivered_at,
                   {_SETTLED_ON.format(status="status", delivered_at="delivered_at")}
              FROM (
            SELECT {_uuid(EVENT, "2 * i + k")} AS id, {_uuid(ORDER, "i")} AS aggregate_id,
                   CASE k WHEN 0 THEN 'billing.intent_recorded' ELSE 'order.handoff_requested' END AS event_type,
                   CASE k WHEN 0 THEN 'fiscal' ELSE 'warehouse' END AS destination,
                   jsonb_build_object('order_id', {_uuid(ORDER, "i")}, 'warehouse_id', 'CEN', 'currency', 'ARS',
                                      'total_cents', i) AS payload,
                   CASE WHEN NOT dead THEN 'ENTREGADO' WHEN i > last_pending OR {_DISCARDED} THEN 'FALLIDO'
                        ELSE 'ENTREGADO' END AS status,
                   CASE WHEN dead THEN {FAILED_ATTEMPTS} + CASE WHEN i > last_pending OR {_DISCARDED} THEN 0 ELSE 1 END
                        ELSE 1 END AS attempts,
                   CASE WHEN dead THEN {FAILED_ATTEMPTS} ELSE 0 END AS cycle_started_attempts,
                   at AS next_attempt_at, at AS created_at,
                   CASE WHEN NOT dead THEN at + interval '80 milliseconds'
                        WHEN i > last_pending OR {_DISCARDED} THEN NULL ELSE at + interval '1 day' END AS delivered_at
              FROM generate_series(1, %(orders)s) AS i, generate_series(0, 1) AS k,
                   LATERAL (SELECT {_ORDER_AT} AS at, {_DEAD} AND k = {_DEAD_K} AS dead,
                                   %(orders)s - %(pending_dead)s * %(step)s AS last_pending) AS x
             WHERE {_STATUS} = 'CONFIRMADO') AS events""",
        ),
        # Dead letters: one per failed event. The newest few are pending; of the rest, one in five was
        # discarded (its event stays FALLIDO) and the others were replayed and delivered (resolved).
        (
            "dead_letter",
            f"""
            INSERT INTO dead_letter (event_id, event_settled_on, destination, status, attempts, last_error, http_status,
                                     error_signature, first_failed_at, last_failed_at, created_at, resolved_at, resolved_by,
                                     resolution_note)
            SELECT {_uuid(EVENT, f"2 * i + {_DEAD_K}")},
                   {_DEAD_LETTER_SETTLED_ON},
                   d, s, {FAILED_ATTEMPTS},
                   'HTTP 503 from ' || d, 503, d || ':http_503', at, at + interval '20 minutes', at + interval '20 minutes',
                   CASE WHEN s <> 'pending' THEN at + interval '1 day' END, CASE WHEN s <> 'pending' THEN 'marta' END,
                   CASE s WHEN 'discarded' THEN 'Emitida a mano' WHEN 'resolved' THEN 'Reintento' END
              FROM generate_series(1, %(orders)s) AS i,
                   LATERAL (SELECT {_ORDER_AT} AS at,
                                   CASE {_DEAD_K} WHEN 0 THEN 'fiscal' ELSE 'warehouse' END AS d,
                                   CASE WHEN i > %(orders)s - %(pending_dead)s * %(step)s THEN 'pending'
                                        WHEN {_DISCARDED} THEN 'discarded' ELSE 'resolved' END AS s) AS x
             WHERE {_DEAD}""",
        ),
        # One attempt per delivered try: the successful one, and a failed event's eight.
        (
            "delivery_attempt",
            f"""
            INSERT INTO delivery_attempt (event_id, event_settled_on, attempt_no, claim_token, worker, started_at,
                                          finished_at, outcome, http_status, error, duration_ms)
            SELECT e.id, e.settled_on, a, e.id, 'worker-1', e.created_at + a * interval '1 second',
                   e.created_at + a * interval '1 second' + interval '40 milliseconds',
                   CASE WHEN a > {FAILED_ATTEMPTS} OR e.attempts = 1 THEN 'ENTREGADO'
                        WHEN a = {FAILED_ATTEMPTS} THEN 'FALLIDO' ELSE 'REINTENTO' END,
                   CASE WHEN a > {FAILED_ATTEMPTS} OR e.attempts = 1 THEN 201 ELSE 503 END,
                   CASE WHEN a <= {FAILED_ATTEMPTS} AND e.attempts > 1 THEN 'HTTP 503' END, 40
              FROM outbox_event e, generate_series(1, e.attempts) AS a
             WHERE e.id >= {_uuid(EVENT, "0")} AND e.id <= {_uuid(EVENT, "2 * %(orders)s + 1")}""",
        ),
        # The order-transaction samples of the last day (nexo.ops.recorder purges older ones): /ops and
        # /metrics read them, so their cost follows the orders of a day, which history does not change.
        (
            "order_transaction_sample",
            f"""
            INSERT INTO order_transaction_sample (occurred_at, seconds, outcome)
            SELECT {_ORDER_AT}, 0.004 + (i %% 23) * 0.001,
                   CASE {_STATUS} WHEN 'CONFIRMADO' THEN 'confirmed' ELSE 'pending_authorization' END
              FROM generate_series(greatest(1, %(orders)s - %(orders)s / 1095), %(orders)s) AS i""",
        ),
        (
            "audit_log",
            f"""
            INSERT INTO audit_log (occurred_at, actor, action, object_type, object_id, details)
            SELECT resolved_at, 'marta', 'dead_letter.' || CASE status WHEN 'discarded' THEN 'discarded' ELSE 'replayed' END,
                   'dead_letter', id::text, jsonb_build_object('note', resolution_note)
              FROM dead_letter WHERE status <> 'pending' AND resolved_by = 'marta'
               AND event_id BETWEEN {_uuid(EVENT, "0")} AND {_uuid(EVENT, "2 * %(orders)s + 1")}""",
        ),
        # The books add up on the grown database as on any other (`flask check`, `backup verify`): what the
        # history's live reservations hold is reserved, and what its orders charged is owed.
        (
            "stock_level (reserved)",
            f"""
            UPDATE stock_level s SET reserved = s.reserved + h.held
              FROM (SELECT product_id, warehouse_id, sum(quantity - dispatched) AS held FROM stock_reservation
                     WHERE released_at IS NULL AND {products}
                     GROUP BY product_id, warehouse_id) AS h
             WHERE s.product_id = h.product_id AND s.warehouse_id = h.warehouse_id""",
        ),
        (
            "client (exposure)",
            f"""
            UPDATE client c SET exposure_cents = c.exposure_cents + o.charged
              FROM (SELECT client_id, sum(charged_cents) AS charged FROM orders
                     WHERE {clients} GROUP BY client_id) AS o
             WHERE c.id = o.client_id""",
        ),
    ]


BIG_TABLES = (
    "orders",
    "order_line",
    "stock_reservation",
    "idempotency_keys",
    "outbox_event",
    "dead_letter",
    "delivery_attempt",
    "audit_log",
    "product",
    "price_list",
    "stock_level",
    "client",
)


def load(conn, volume: Volume, report=None, *, generation: int = 0, waiting: bool = True) -> dict[str, int]:
    """Insert the history in the caller's transaction; return the rows each table received.

    Needs the Nexo morning (warehouses CEN and NOR, the demo salespeople and credit officer) loaded
    first. report(table, rows, seconds) is called after each statement, for progress output.
    A database takes one load per generation: each generation's ids (its table tags + 16 × generation),
    SKUs (GRW-, GR1-, …) and client names are its own, so the growth phase can load a first page's worth
    (generation 1) under the years of history (generation 0). waiting=False: no order of this load waits
    for credit (one in seven of the newest 140 does otherwise), so the authorization queue shows what an
    earlier generation left in it, as it would after years in which the officer worked through it.
    """
    import time

    # A bulk load of millions of rows in one transaction: db upgrade's statement_timeout (DB_STATEMENT_TIMEOUT_S,
    # ADR-019) guards request threads, not this; the whole-table statements take longer than it.
    conn.execute("SET LOCAL statement_timeout = 0")
    sellers = [
        r["id"]
        for r in conn.execute(
            "SELECT u.id FROM app_user u JOIN user_role r ON r.user_id = u.id AND r.role_name = 'ventas' ORDER BY u.id"
        ).fetchall()
    ]
    officer = conn.execute("SELECT id FROM app_user WHERE username = 'laura'").fetchone()["id"]
    step = max(1, volume.orders // max(1, volume.dead_letters))
    params = {
        "orders": volume.orders,
        "clients": volume.clients,
        "skus": volume.skus,
        "step": step,
        "span": SPAN,
        "sellers": sellers,
        "officer": officer,
        "waiting_span": WAITING_SPAN if waiting else 0,
        "pending_dead": min(PENDING_DEAD_LETTERS, max(1, volume.dead_letters // 100)),
    }
    if conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()["rolsuper"]:
        # The rows are consistent by construction; checking each foreign key row by row would about
        # double the load time. Only a superuser may skip them (and only for this transaction).
        conn.execute("SET LOCAL session_replication_role = replica")
    _add_months(conn)
    conn.execute("SET LOCAL lock_timeout = 0")  # adding a month set one for this transaction; the load waits
    counts = {}
    for table, sql in statements(generation):
        if table == "stock_level (reserved)":
            # The books-add-up updates join what this transaction just loaded. Their plans need its
            # statistics, which autovacuum may not have taken yet (ANALYZE here counts this transaction's
            # own rows): planned on a product table of 2,005 rows, one ran a nested loop of two sequential
            # scans for over a quarter of an hour in the backup phase.
            for analysed in ("product", "stock_reservation", "stock_level", "orders", "client"):
                conn.execute(f"ANALYZE {analysed}")
        began = time.monotonic()
        counts[table] = conn.execute(sql, params).rowcount
        if report is not None:
            report(table, counts[table], time.monotonic() - began)
    conn.execute("SET LOCAL session_replication_role = DEFAULT")
    # The replica role also skipped the trigger that versions the client list (migration 0090): move
    # the version here, or the web processes would keep showing the clients they had before the load.
    conn.execute("UPDATE list_version SET version = gen_random_uuid() WHERE list = 'client'")
    return counts


def _add_months(conn) -> None:
    """The partitions of every month of the span (and the next), as the maintenance runner adds them."""
    oldest = conn.execute("SELECT ((now() - %s::interval) AT TIME ZONE 'UTC')::date AS d", [SPAN]).fetchone()["d"]
    today = datetime.now(UTC).date()
    month = history.month_start(oldest)
    existing = set(history.months_filed(conn))
    while month <= history.next_month(history.month_start(today)):
        if month not in existing:
            history.add_month(conn, month)
        month = history.next_month(month)


def add_clients(conn, first: int, last: int) -> int:
    """Add generation 0's clients numbered first..last (a distributor with many more clients than the
    history's orders name) in the caller's transaction; return how many. The client list's trigger moves
    its version (migration 0090), so the web processes see them."""
    return conn.execute(
        f"""
        INSERT INTO client (id, name, tier, credit_limit_cents, opening_exposure_cents)
        SELECT {_uuid(TAGS["client"], "n")}, 'Cliente ' || lpad(n::text, 6, '0') || ' ' ||
               (ARRAY['Ferretería', 'Corralón', 'Obras', 'Sanitarios', 'Pinturería'])[1 + n %% 5],
               CASE WHEN n %% 20 = 0 THEN 'PLATINO' ELSE 'REGULAR' END, 1000000000000000, 0
          FROM generate_series(%(first)s::bigint, %(last)s::bigint) AS n""",
        {"first": first, "last": last},
    ).rowcount


def vacuum(conn) -> None:
    """VACUUM (ANALYZE) every table the history filled (autocommit conn): a database that grew over years has its
    visibility map set and its statistics fresh, by autovacuum, long before anyone measures it."""
    conn.execute("SET statement_timeout = 0")  # as in load(): maintenance of whole tables, not a request
    for table in BIG_TABLES:
        conn.execute(f"VACUUM (ANALYZE) {table}")


def analyze(conn) -> None:
    """Refresh the planner's statistics of every table the history filled (autovacuum would, later), in the
    caller's transaction."""
    conn.execute("SET LOCAL statement_timeout = 0")
    for table in BIG_TABLES:
        conn.execute(f"ANALYZE {table}")
