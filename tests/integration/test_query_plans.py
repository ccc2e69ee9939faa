"""No request path reads a big table sequentially once the data has grown (ADR-011).

The statements are not a hand-kept list: every page and form of the request paths is exercised
through the app, each SQL statement it sends is recorded (psycopg's Cursor.execute, this thread
only) and then EXPLAINed with the same parameters against a database holding more than 10,000 rows
in each big table (bench/grow.py, the growth bench's loader, much smaller), after ANALYZE. A query
added to any page tomorrow is checked by this test without editing it.
"""

from __future__ import annotations

import json
import threading
import uuid

import psycopg
import pytest

from bench import grow
from nexo.api import keys
from nexo.books import check_books
from nexo.outbox import history
from tests.helpers import csrf_token

pytestmark = pytest.mark.slow

BIG = 10_000  # a big table: more than 10,000 rows
# 50,000 SKUs, the growth bench's catalog: the SKU lookup by words must read its trigram index there too.
VOLUME = grow.Volume(orders=10_500, dead_letters=10_500, clients=2_000, skus=50_000)
EXPLAINABLE = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE")


# A partition's rows are its table's: the outbox's live partition and its months (migration 0700).
_TABLE_OF = """SELECT c.relname AS relation, coalesce(pg_partition_root(c.oid), c.oid)::regclass::text AS table_name,
                      c.reltuples
                 FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace"""


@pytest.fixture
def grown(db):
    """The Nexo morning plus the history (its settled events filed by month, ADR-019), analysed; returns the
    row count of every table."""
    with db.transaction() as tx:
        grow.load(tx.conn, VOLUME)
        tx.commit()
    assert history.file_settled_events(db).filed == 0  # grow files what the maintenance runner would have
    with db.transaction() as tx:
        grow.analyze(tx.conn)
        tx.commit()
    counts: dict[str, float] = {}
    with db.reading() as conn:
        for r in conn.execute(_TABLE_OF).fetchall():
            counts[r["table_name"]] = counts.get(r["table_name"], 0) + max(r["reltuples"], 0)
    return counts


def big_relations(db) -> dict[str, str]:
    """The relations holding more than BIG rows each, with the table they belong to. A partition is judged by
    its own rows: a sequential scan reads that partition, not the table (a month of a small history is small)."""
    with db.reading() as conn:
        return {r["relation"]: r["table_name"] for r in conn.execute(_TABLE_OF).fetchall() if r["reltuples"] > BIG}


class Recorder:
    """Every statement this thread sends through psycopg while `on` (the app's, not a background thread's)."""

    def __init__(self):
        self.statements: list[tuple[str, str, object]] = []
        self.page = ""
        self.thread = threading.get_ident()

    def install(self, monkeypatch):
        original = psycopg.Cursor.execute
        recorder = self

        def execute(cursor, query, params=None, **kwargs):
            if threading.get_ident() == recorder.thread and recorder.page:
                text = query if isinstance(query, str) else query.as_string(cursor.connection)
                recorder.statements.append((recorder.page, text, params))
            return original(cursor, query, params, **kwargs)

        monkeypatch.setattr(psycopg.Cursor, "execute", execute)


def _seq_scans(plan: dict) -> list[str]:
    found = [plan["Relation Name"]] if plan.get("Node Type") == "Seq Scan" else []
    for child in plan.get("Plans", []):
        found += _seq_scans(child)
    return found


def _visit(client, recorder, label: str, method: str, url: str, data: dict | None = None, ok=(200, 303)):
    recorder.page = label
    response = client.open(url, method=method, data=data)
    recorder.page = ""
    assert response.status_code in ok, f"{label}: HTTP {response.status_code}"
    return response


def _api(client, recorder, label: str, method: str, url: str, key: str, body=None, ok=(200, 201)):
    recorder.page = label
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": str(uuid.uuid4())}
    response = client.open(url, method=method, json=body, headers=headers)
    recorder.page = ""
    assert response.status_code in ok, f"{label}: HTTP {response.status_code} {response.get_data(as_text=True)}"
    return response


def _login(app, username: str):
    client = app.test_client()
    token = csrf_token(client.get("/login").get_data(as_text=True))
    assert client.post("/login", data={"username": username, "password": "nexo-demo", "csrf_token": token}).status_code == 302
    return client


def _order_form(token: str, client_id, lines) -> dict:
    form = {"csrf_token": token, "request_id": str(uuid.uuid4()), "client_id": str(client_id), "deposit_id": "CEN"}
    for i, (sku, quantity) in enumerate(lines):
        form[f"lines-{i}-sku"], form[f"lines-{i}-quantity"] = sku, str(quantity)
    return form


def _exercise(app, db, recorder):
    """Every request path people wait for, as its user: order entry, order pages, credit, dead letters, ops."""
    with db.reading() as conn:
        seller = conn.execute("SELECT id FROM app_user WHERE username = 'vendedor1'").fetchone()["id"]
        own_order = conn.execute(
            "SELECT id FROM orders WHERE salesperson_id = %s ORDER BY created_at DESC LIMIT 1", [seller]
        ).fetchone()["id"]
        grown_client = conn.execute("SELECT id FROM client WHERE name LIKE 'Cliente 0%%' LIMIT 1").fetchone()["id"]
        pending = conn.execute(
            "SELECT id FROM orders WHERE status = 'PENDIENTE_AUTORIZACION' ORDER BY created_at LIMIT 1"
        ).fetchone()["id"]
        dead_letter = conn.execute("SELECT id FROM dead_letter ORDER BY id DESC LIMIT 1").fetchone()["id"]
    client = _login(app, "vendedor1")
    page = _visit(client, recorder, "GET /orders/new", "GET", "/orders/new").get_data(as_text=True)
    token = csrf_token(page)
    _exercise_sku_lookup(client, recorder)
    _visit(client, recorder, "GET /orders?numero= (ADR-020)", "GET", "/orders?numero=P-000777", ok=(303, 404))
    entered = _visit(
        client,
        recorder,
        "POST /orders/new (confirmed)",
        "POST",
        "/orders/new",
        _order_form(token, grown_client, [("GRW-000010", 1), ("GRW-000200", 2)]),
    )
    to_dispatch = entered.headers["Location"].rsplit("/", 1)[1]  # its stock figures add up (the history's need not)
    _visit(
        client,
        recorder,
        "POST /orders/new (422)",
        "POST",
        "/orders/new",
        _order_form(token, grown_client, [("PRC-000", 1), ("GRW-000011", 1)]),
        ok=(422,),
    )
    _visit(client, recorder, "GET /orders", "GET", "/orders")
    _visit(client, recorder, "GET /orders/<id>", "GET", f"/orders/{own_order}")
    cancel = {"csrf_token": token, "reason": "el cliente lo anuló"}
    _visit(client, recorder, "POST /orders/<id>/cancel", "POST", f"/orders/{own_order}/cancel", cancel, ok=(303, 409))
    # The Orders API (ADR-015). GET /api/v1/catalog unpaged is left out: CONTRACT.md has it list every
    # product; its pages are in.
    key, api = keys.create_key(db, name="plans", username="vendedor1", actor="test"), app.test_client()
    _exercise_catalog(api, recorder, key)
    placed = [
        _api(
            api,
            recorder,
            "POST /api/v1/orders",
            "POST",
            "/api/v1/orders",
            key,
            {"client_id": str(grown_client), "deposit_id": "CEN", "lines": [{"sku": sku, "quantity": 1}]},
        ).get_json()["id"]
        for sku in ("GRW-000012", "GRW-000013")
    ]
    _api(api, recorder, "POST /api/v1/orders/<id>/cancel", "POST", f"/api/v1/orders/{placed[0]}/cancel", key, {"reason": "x"})
    warehouse = keys.create_key(db, name="plans-warehouse", username="sergio", actor="test")
    shipment = f"/api/v1/orders/{placed[1]}/shipments"
    _api(api, recorder, "POST shipments", "POST", shipment, warehouse, {"lines": [{"sku": "GRW-000013", "quantity": 1}]})
    accounting = keys.create_key(db, name="plans-accounting", username="laura", actor="test")
    payment = {"amount_cents": 1, "reference": "plan"}
    _api(api, recorder, "POST payments", "POST", f"/api/v1/clients/{grown_client}/payments", accounting, payment)
    cursor = _api(api, recorder, "GET /api/v1/orders", "GET", "/api/v1/orders?limit=5", key).get_json()["next_cursor"]
    _api(api, recorder, "GET /api/v1/orders next page", "GET", f"/api/v1/orders?limit=5&status=CONFIRMADO&cursor={cursor}", key)
    _api(api, recorder, "GET /api/v1/orders/<id>", "GET", f"/api/v1/orders/{own_order}", key)
    client = _login(app, "laura")
    page = _visit(client, recorder, "GET /credit/queue", "GET", "/credit/queue").get_data(as_text=True)
    _visit(client, recorder, "GET /credit/decided", "GET", "/credit/decided")
    _visit(
        client, recorder, "POST approve", "POST", f"/credit/queue/{pending}/approve", {"csrf_token": csrf_token(page), "note": ""}
    )
    _exercise_account_and_warehouse(app, recorder, grown_client, to_dispatch)
    _exercise_finding(app, recorder, grown_client, seller)
    client = _login(app, "marta")
    _visit(client, recorder, "GET /ops", "GET", "/ops")
    for label, query in (
        ("first page", ""),
        ("destination + status", "?destination=fiscal&status=resolved"),
        ("pending", "?status=pending"),
        ("client", f"?client={grown_client}"),
        ("page 20", "?destination=warehouse&page=20"),
    ):
        _visit(client, recorder, f"GET /admin/dead-letters {label}", "GET", f"/admin/dead-letters{query}")
    _visit(client, recorder, "GET /admin/dead-letters/groups", "GET", "/admin/dead-letters/groups")
    _visit(client, recorder, "GET /admin/dead-letters/<id>", "GET", f"/admin/dead-letters/{dead_letter}")
    client = _login(app, "vendedor1")
    _visit(client, recorder, "GET /metrics", "GET", "/metrics")


def _exercise_sku_lookup(client, recorder) -> None:
    """The order form's SKU lookup: by a prefix, as it began, and by any words of the SKU and the name."""
    _visit(client, recorder, "GET /orders/skus (SKU)", "GET", "/orders/skus?q=GRW-0001&page=2")
    _visit(client, recorder, "GET /orders/skus (name)", "GET", "/orders/skus?q=cab")
    # By any words of the SKU and the name, in any order (migration 0630's trigram index).
    _visit(client, recorder, "GET /orders/skus (words)", "GET", "/orders/skus?q=modelo+4711")
    _visit(client, recorder, "GET /orders/skus (SKU and name words)", "GET", "/orders/skus?q=cemento+grw-0123")
    _visit(client, recorder, "GET /orders/skus (inside the SKU)", "GET", "/orders/skus?q=04711")


def _exercise_catalog(api, recorder, key) -> None:
    """The Orders API's catalog, paged and looked up, as the form's lookup (ADR-015)."""
    cursor = _api(api, recorder, "GET /api/v1/catalog?limit", "GET", "/api/v1/catalog?limit=50", key).get_json()["next_cursor"]
    _api(api, recorder, "GET /api/v1/catalog next page", "GET", f"/api/v1/catalog?limit=50&cursor={cursor}", key)
    cursor = _api(api, recorder, "GET /api/v1/catalog?q", "GET", "/api/v1/catalog?q=GRW-0002&limit=20", key).get_json()[
        "next_cursor"
    ]
    _api(api, recorder, "GET /api/v1/catalog?q next page", "GET", f"/api/v1/catalog?q=GRW-0002&limit=20&cursor={cursor}", key)
    words = "/api/v1/catalog?q=llave+modelo+1&limit=20"
    cursor = _api(api, recorder, "GET /api/v1/catalog?q words", "GET", words, key).get_json()["next_cursor"]
    _api(api, recorder, "GET /api/v1/catalog?q words next page", "GET", f"{words}&cursor={cursor}", key)


def _exercise_finding(app, recorder, grown_client, seller) -> None:
    """Every filter of the back office's order list and its CSV, as credit sees them (ADR-020)."""
    client = _login(app, "laura")
    for label, query in (
        ("first page", ""),
        ("client name", "?cliente=Cliente%2000001"),
        ("status", "?estado=ANULADO"),
        ("two statuses", "?estado=DESPACHADO&estado=DESPACHADO_PARCIAL"),
        ("SKU", "?sku=GRW-000010"),
        ("salesperson", f"?vendedor={seller}"),
        ("dates", "?desde=2026-01-01&hasta=2026-01-31"),
        ("number", "?numero=P-000777"),
        ("channel + client", "?canal=formulario&cliente=Cliente%2000002"),
        ("by amount, biggest first", "?orden=importe_desc"),
        ("by amount, smallest first", "?orden=importe_asc"),
        ("salesperson by amount", f"?vendedor={seller}&orden=importe_desc"),
        ("oldest first", "?orden=fecha_asc"),
    ):
        _visit(client, recorder, f"GET /orders/all {label}", "GET", f"/orders/all{query}", ok=(200, 303, 404))
    _visit(client, recorder, "GET /orders.csv by client, per line", "GET", "/orders.csv?cliente=Cliente%2000001&por=linea")
    _visit(client, recorder, "GET /orders.csv by amount", "GET", "/orders.csv?orden=importe_asc")


def _exercise_account_and_warehouse(app, recorder, grown_client, to_dispatch) -> None:
    """A client's account and its forms (credit), the warehouse page and its dispatch form (the warehouse)."""
    client = _login(app, "laura")
    page = _visit(client, recorder, "GET /clients/<id>", "GET", f"/clients/{grown_client}").get_data(as_text=True)
    payment = {"csrf_token": csrf_token(page), "amount": "1,00", "reference": "recibo", "payment_id": str(uuid.uuid4())}
    _visit(client, recorder, "POST /clients/<id>/payments", "POST", f"/clients/{grown_client}/payments", payment, ok=(303, 422))
    limit = {"csrf_token": csrf_token(page), "limit": "1.000.000", "reason": "revisión anual"}
    _visit(client, recorder, "POST /clients/<id>/limit", "POST", f"/clients/{grown_client}/limit", limit)
    client = _login(app, "sergio")
    page = _visit(client, recorder, "GET /warehouse", "GET", "/warehouse").get_data(as_text=True)
    shipment = {"csrf_token": csrf_token(page), "dispatch_id": str(uuid.uuid4())}
    _visit(client, recorder, "POST dispatch", "POST", f"/warehouse/orders/{to_dispatch}/dispatch", shipment)
    _visit(client, recorder, "GET /warehouse after a dispatch", "GET", "/warehouse")
    _visit(client, recorder, "GET /warehouse of one deposit", "GET", "/warehouse?deposit=NOR")
    _visit(client, recorder, "GET /warehouse of one deposit, page 2", "GET", "/warehouse?deposit=CEN&page=2")


def test_no_request_path_scans_a_big_table(app, db, grown, monkeypatch):
    big = {table for table, rows in grown.items() if rows > BIG}
    assert {
        "orders",
        "outbox_event",
        "dead_letter",
        "order_line",
        "stock_reservation",
        "delivery_attempt",
        "idempotency_keys",
        "product",
        "stock_level",
    } <= big, f"the history did not load: {grown}"
    recorder = Recorder()
    recorder.install(monkeypatch)
    _exercise(app, db, recorder)
    monkeypatch.undo()
    assert len({page for page, _, _ in recorder.statements}) >= 15, "a page sent no SQL: was it recorded?"
    failures = []
    big_ones = big_relations(db)
    with db.transaction() as tx:  # never committed: EXPLAIN does not run the statement anyway
        for page, sql, params in recorder.statements:
            if not sql.lstrip().upper().startswith(EXPLAINABLE):
                continue
            plan = tx.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()
            root = plan["QUERY PLAN"] if isinstance(plan["QUERY PLAN"], list) else json.loads(plan["QUERY PLAN"])
            scanned = sorted(
                f"{big_ones[r]} ({r})" if big_ones[r] != r else r for r in set(_seq_scans(root[0]["Plan"])) & set(big_ones)
            )
            if scanned:
                failures.append(f"{page}: Seq Scan on {', '.join(scanned)}\n    {' '.join(sql.split())[:300]}")
    assert not failures, "sequential scans of big tables:\n" + "\n".join(failures)


def test_the_grown_history_keeps_the_books(db, grown):
    """bench/grow.py's history adds up like real data (`flask check`), so `backup verify` holds on it too."""
    with db.reading() as conn:
        failed = [finding for finding in check_books(conn) if not finding.ok]
    assert failed == []
