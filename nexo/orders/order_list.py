"""Finding orders (ADR-020): a salesperson's own orders (GET /orders), every order for credit and the
owner (GET /orders/all, read-only), both with the filters of nexo/orders/finder.py, and the same list as
a CSV (GET /orders.csv) streamed row by row."""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Iterator
from datetime import datetime

from flask import Blueprint, Response, abort, redirect, render_template, request, stream_with_context, url_for
from flask_login import current_user

from nexo import vocabulary
from nexo.extensions import get_db
from nexo.formatting import format_order_number
from nexo.orders import finder
from nexo.orders.views import ORDER_VIEWER_PERMISSIONS
from nexo.states import OrderStatus

log = logging.getLogger(__name__)


def _sees_everyone() -> bool:
    return any(current_user.can(permission) for permission in ORDER_VIEWER_PERMISSIONS)


def list_orders():
    """The salesperson's own orders, newest first unless sorted otherwise, filtered; credit and the owner are sent
    to every order."""
    if not current_user.can("orders.create"):
        if _sees_everyone():
            query = request.query_string.decode()
            return redirect(url_for("orders.all_orders") + (f"?{query}" if query else ""), 303)
        abort(403)
    return _list(everyone=False)


def all_orders():
    """Every order, newest first unless sorted otherwise, filtered, for those who may open any order (credit, the
    owner): read-only."""
    if not _sees_everyone():
        abort(403)
    return _list(everyone=True)


def _list(*, everyone: bool):
    """The list page; a number that names one order the person may open goes straight to it (ADR-020)."""
    try:
        filters = finder.OrderFilters.from_args(request.args, salesperson_id=None if everyone else current_user.id)
    except finder.FilterError as refused:
        return _render(everyone, finder.OrderFilters(), [], None, 0, error=refused), 400
    db = get_db()
    with db.reading() as conn:
        filters = finder.matching_clients(conn, filters)
        orders, next_cursor = finder.page(conn, filters)
        if filters.number is not None and len(orders) == 1 and filters.after is None:
            return redirect(url_for("orders.show_order", order_id=orders[0]["id"]), 303)
        total = finder.count(conn, filters) if orders else 0
        choices = (finder.salespeople(conn), finder.api_keys(conn)) if everyone else ([], [])
        seen = None if everyone else finder.seen_until(conn, current_user.id)
    not_found = filters.number is not None and not orders
    page = _render(
        everyone, filters, orders, next_cursor, total, salespeople=choices[0], keys=choices[1], not_found=not_found, seen=seen
    )
    if seen is not None:
        # The rows changed since the last visit are marked on this page; from now on they are not news.
        with db.transaction() as tx:
            finder.mark_seen(tx.conn, current_user.id)
            tx.commit()
    return page, 404 if not_found else 200


def news_badge() -> int | None:
    """How many of the salesperson's orders changed since they last opened their list (the menu); None on
    any error: a badge is never a reason to fail a page."""
    try:
        with get_db().reading() as conn:
            return finder.news_count(conn, current_user.id) or None
    except Exception:
        log.warning("orders news badge unavailable", exc_info=True)
        return None


def _render(everyone, filters, orders, next_cursor, total, *, error=None, salespeople=(), keys=(), not_found=False, seen=None):
    return render_template(
        "orders/list.html",
        everyone=everyone,
        filters=filters,
        orders=orders,
        next_cursor=next_cursor,
        total=total,
        count_cap=finder.COUNT_CAP,
        error=error,
        salespeople=salespeople,
        keys=keys,
        statuses=list(OrderStatus),
        sort_choices=finder.SORT_CHOICES,
        not_found=not_found,
        seen=seen,
    )


# --- the CSV ---------------------------------------------------------------------------------------------

ORDER_HEADERS = ["Número", "Fecha", "Cliente", "Vendedor", "Depósito", "Estado", "Facturación", "Canal", "Total (ARS)"]
LINE_HEADERS = [*ORDER_HEADERS, "SKU", "Producto", "Cantidad", "Precio unitario (ARS)", "Importe (ARS)"]
# A cell a spreadsheet would read as a formula (CSV injection): text that begins like one gets a quote.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def export_orders():
    """The list's orders in its order (`por=linea`: one row per line) as CSV with Spanish headers, streamed: amounts in
    pesos with a decimal point (a number every spreadsheet sums), dates ISO 8601 with their offset."""
    everyone = _sees_everyone()
    if not everyone and not current_user.can("orders.create"):
        abort(403)
    try:
        filters = finder.OrderFilters.from_args(request.args, salesperson_id=None if everyone else current_user.id)
    except finder.FilterError as refused:
        return Response(f"{refused}\n", status=400, mimetype="text/plain")
    per_line = request.args.get("por") == "linea"
    rows = finder.stream_rows(get_db(), filters, per_line=per_line)
    stamp = datetime.now().strftime("%Y%m%d-%H%M")
    return Response(
        stream_with_context(_csv(rows, per_line)),
        mimetype="text/csv",
        headers={
            "Content-Disposition": f'attachment; filename="pedidos-{stamp}{"-lineas" if per_line else ""}.csv"',
            "X-Accel-Buffering": "no",  # a proxy in front passes the rows on as they come
        },
    )


def _csv(rows: Iterator, per_line: bool) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flushed() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(LINE_HEADERS if per_line else ORDER_HEADERS)
    yield "\ufeff" + flushed()  # the BOM tells Excel the file is UTF-8 (accents in names)
    for n, row in enumerate(rows, start=1):
        cells = [
            format_order_number(row["number"]),
            row["created_at"].isoformat(timespec="seconds"),
            _text(row["client_name"]),
            _text(row["salesperson_name"]),
            row["warehouse_id"],
            vocabulary.words("order_status", row["status"]),
            vocabulary.words("billing_status", row["billing_status"]),
            _text(f"API: {row['api_key_name']}") if row["api_key_name"] else "Formulario",
            _pesos(row["total_cents"]),
        ]
        if per_line:
            cells += [
                row["sku"],
                _text(row["product_name"]),
                row["quantity"],
                _pesos(row["unit_price_cents"]),
                _pesos(row["amount_cents"]),
            ]
        writer.writerow(cells)
        if n % 500 == 0:
            yield flushed()
    yield flushed()


def _pesos(cents: int) -> str:
    sign = "-" if cents < 0 else ""
    return f"{sign}{abs(cents) // 100}.{abs(cents) % 100:02d}"


def _text(value: str | None) -> str:
    text = value or ""
    return "'" + text if text.startswith(FORMULA_START) else text


def add_routes(bp: Blueprint) -> None:
    """This module's pages on the orders blueprint (nexo/orders/__init__.py); each endpoint is orders.<view>."""
    bp.add_url_rule("/orders", view_func=list_orders)
    bp.add_url_rule("/orders/all", view_func=all_orders)
    bp.add_url_rule("/orders.csv", view_func=export_orders)
