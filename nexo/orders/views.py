"""Order pages: the form (GET/POST /orders/new), the SKU lookup and my orders (/orders); one order and its cancel
are in order_page.py, the lists in order_list.py, the warehouse's in picking.py and warehouse_views.py: all
on one blueprint, `orders`, that nexo/orders/__init__.py builds from each module's add_routes."""

from __future__ import annotations

import uuid

from flask import Blueprint, abort, current_app, flash, g, jsonify, redirect, render_template, request, session, url_for
from flask_login import current_user

from nexo.auth.permissions import permission_required
from nexo.extensions import get_db, get_wakeup, mail_enabled
from nexo.orders import commands, line_hints, queries, service
from nexo.orders.client_options import ClientOptions
from nexo.orders.fingerprint import normalise_sku
from nexo.orders.forms import MAX_SKU_LENGTH, MIN_ROWS, LineRow, OrderForm, check_rows, padded, parse_uuid, read_rows

# Who may look at any order besides the salesperson who entered it.
ORDER_VIEWER_PERMISSIONS = ("credit.authorize", "ops.view", "dlq.admin")
REPLAYED_KEY = "orders.replayed"  # the order page says once that a form sent again was the same order
LOOKUP_PAGE = 20  # SKUs per page of the lookup, and on a fresh form
MAX_LOOKUP_PAGES = 500  # 10,000 matches: enough to browse, past that another word narrows it
# What the 503 page of an outage says on the order form (registered by nexo/orders/__init__.py).
RETRY_ADVICE = (
    "La base de datos no responde y no sabemos si el pedido llegó a guardarse. En unos segundos confirmá "
    "el mismo formulario otra vez (con el botón de abajo): si ya se había guardado vas a ver ese mismo "
    "pedido, nunca uno duplicado."
)


@permission_required("orders.create")
def new_order():
    """Show a fresh order form, or take a posted one through create_order (CU-01)."""
    if request.method == "GET":
        rows = request.args.get("rows", type=int) or MIN_ROWS
        fresh = OrderForm(formdata=None)
        fresh.client_id.data = request.args.get("client_id", "")[:40]  # the client lookup's choice
        return _render_form(fresh, str(uuid.uuid4()), padded([], min(max(rows, MIN_ROWS), commands.MAX_LINES)))
    form = OrderForm()
    rows, lines, errors = _validate(form)
    request_id = parse_uuid(form.request_id.data)
    # A missing request_id is always one of the errors (_validate).
    if request_id is None or errors or any(row.error for row in rows):
        return _render_form(form, str(request_id or uuid.uuid4()), padded(rows), errors, 400)
    cmd = commands.CreateOrder(
        request_id=request_id,
        client_id=uuid.UUID(form.client_id.data),
        warehouse_id=form.deposit_id.data or "",  # never empty here: _validate refused a blank one
        lines=tuple(lines),
        salesperson_id=current_user.id,
        delivery_method=(form.delivery_method.data or "").strip() or None,
        correlation_id=g.get("request_id"),
    )
    result = service.create_order(get_db(), cmd, get_wakeup(), mail=mail_enabled())
    return _respond(result, form, rows, str(request_id))


def _validate(form: OrderForm):
    """Shape checks of a posted form: (rows as typed, valid lines, field errors).

    Whether the client and the warehouse exist is create_order's to say (inside its transaction, one
    point lookup each), not a read of every client here on the hot path of each order (make bench).
    """
    # The field validators first (control characters in any field, delivery_method's length); CSRF
    # is checked globally.
    form.validate()
    errors = {field.name: field.errors[0] for field in form if field.errors}
    if parse_uuid(form.request_id.data) is None:
        errors.setdefault(
            "request_id", "Este formulario no tiene un identificador válido. Abrí un pedido nuevo desde «Nuevo pedido»."
        )
    if parse_uuid(form.client_id.data) is None:
        errors.setdefault("client_id", "Elegí un cliente de la lista.")
    if not (form.deposit_id.data or "").strip():
        errors.setdefault("deposit_id", "Elegí un depósito de la lista.")
    rows, too_many = read_rows(request.form)
    lines, no_lines = check_rows(rows)
    lines_error = too_many or no_lines
    if lines_error:
        errors["lines"] = lines_error
    return rows, lines, errors


def _respond(result: commands.OrderResult, form: OrderForm, rows: list[LineRow], request_id: str):
    match result:
        case commands.Replayed(order_id=order_id):
            # Shown once by show_order; kept out of the URL so the redirect is exactly /orders/<id>.
            session[REPLAYED_KEY] = str(order_id)
            return redirect(url_for("orders.show_order", order_id=order_id), 303)
        case commands.Confirmed(order_id=order_id):
            flash("Pedido registrado.", "info")
            return redirect(url_for("orders.show_order", order_id=order_id), 303)
        case commands.PendingAuthorization(order_id=order_id):
            flash("Pedido registrado, pero NO confirmado: espera autorización de crédito.", "info")
            return redirect(url_for("orders.show_order", order_id=order_id), 303)
        case commands.Conflict():
            return render_template("orders/conflict.html", request_id=request_id), 409
        case commands.Rejected(problems=problems):
            reasons = {p.sku: p.reason for p in problems}
            for row in rows:
                row.reason = reasons.get(row.normalised_sku)
            return _render_form(form, request_id, padded(rows), {}, 422, problems=problems)
        case commands.Invalid(field_errors=field_errors):
            return _render_form(form, request_id, padded(rows), dict(field_errors), 400)


def _render_form(
    form: OrderForm, request_id: str, rows: list[LineRow], errors: dict | None = None, status: int = 200, problems=()
):
    # Never the whole catalog (tens of thousands of SKUs are megabytes, and each 422 would send them
    # again): a fresh form shows the catalog's first page, an answer to a post the well-formed lines
    # typed in it (a malformed one, e.g. a control character, is never sent to the database).
    # The SKU lookup (/orders/skus) finds the rest.
    typed = line_hints.lookup_skus(rows)
    with get_db().reading() as conn:
        client_field = _client_options().field(conn, form.client_id.data)  # first: it reads the version
        context = {
            "warehouses": queries.warehouses(conn),
            "catalog": queries.catalog_of(conn, typed)
            if request.method == "POST"
            else queries.find_skus(conn, "", limit=LOOKUP_PAGE),
        }
    # A form sent back names every problem the catalog can tell at once, and each line's name and price.
    total = line_hints.hint_rows(rows, context["catalog"], form.deposit_id.data) if request.method == "POST" else None
    chosen = parse_uuid(form.client_id.data) if request.method == "POST" else None
    available_credit = None
    if chosen is not None:
        with get_db().reading() as conn:
            available_credit = queries.available_credit(conn, chosen)
    return render_template(
        "orders/new.html",
        form=form,
        request_id=request_id,
        rows=rows,
        errors=errors or {},
        problems=problems,
        more_rows=min(len(rows) + MIN_ROWS, commands.MAX_LINES),
        max_rows=commands.MAX_LINES,
        client_field=client_field,
        total_cents=total,
        available_credit=available_credit,
        **context,
    ), status


@permission_required("orders.create")
def find_skus():
    """SKU lookup: products whose SKU or name holds every word of `q`, with price and availability; a plain GET page."""
    text = request.args.get("q", "")[:40]
    # Past a few hundred pages the salesperson types more letters instead; the cap also keeps a
    # forged ?page= from turning into an OFFSET Postgres refuses (a 500 instead of a page).
    page = min(max(1, request.args.get("page", type=int) or 1), MAX_LOOKUP_PAGES)
    with get_db().reading() as conn:
        found = queries.find_skus(conn, text, limit=LOOKUP_PAGE + 1, offset=(page - 1) * LOOKUP_PAGE)
        warehouses = queries.warehouses(conn)
    return render_template(
        "orders/skus.html",
        q=text,
        page=page,
        catalog=found[:LOOKUP_PAGE],
        has_next=len(found) > LOOKUP_PAGE,
        warehouses=warehouses,
    )


@permission_required("orders.create")
def find_clients():
    """Client lookup of the order form past SELECT_LIMIT clients (CONTRACT.md): names holding every word of `q`, each a
    link that opens a new form with that client chosen; a plain GET page, no JavaScript needed."""
    text = request.args.get("q", "").strip()[:80]
    page = min(max(1, request.args.get("page", type=int) or 1), MAX_LOOKUP_PAGES)
    with get_db().reading() as conn:
        found = queries.find_clients(conn, text, limit=LOOKUP_PAGE + 1, offset=(page - 1) * LOOKUP_PAGE) if text else []
    return render_template(
        "orders/clients.html", q=text, page=page, clients=found[:LOOKUP_PAGE], has_next=len(found) > LOOKUP_PAGE
    )


@permission_required("orders.create")
def sku_line():
    """One typed SKU's name, price and availability per deposit, for the form's live hints (orders.js): JSON."""
    sku = normalise_sku(request.args.get("sku", "")[:MAX_SKU_LENGTH])
    with get_db().reading() as conn:
        found = queries.catalog_of(conn, [sku]) if sku else []
    if not found:
        return jsonify({"found": False, "sku": sku})
    item = found[0]
    return jsonify(
        {
            "found": True,
            "sku": item["sku"],
            "name": item["name"],
            "price_cents": item["price_cents"],
            "available": item["available"],
        }
    )


@permission_required("orders.create")
def client_credit(client_id: uuid.UUID):
    """The client's available credit, for the form's running total (orders.js): JSON; 404 for an unknown client."""
    with get_db().reading() as conn:
        available = queries.available_credit(conn, client_id)
    if available is None:
        abort(404)
    return jsonify({"client_id": str(client_id), "available_cents": available})


def _client_options() -> ClientOptions:
    """The order form's client select of this process (built by nexo/orders/__init__.py)."""
    return current_app.extensions["nexo.client_options"]


def add_routes(bp: Blueprint) -> None:
    """This module's pages on the orders blueprint (nexo/orders/__init__.py); each endpoint is orders.<view>."""
    bp.add_url_rule("/orders/new", view_func=new_order, methods=["GET", "POST"])
    bp.add_url_rule("/orders/skus", view_func=find_skus)
    bp.add_url_rule("/orders/clients", view_func=find_clients)
    bp.add_url_rule("/orders/skus/line", view_func=sku_line)
    bp.add_url_rule("/orders/clients/<uuid:client_id>/credit", view_func=client_credit)
