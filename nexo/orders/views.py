"""Order pages: the form (GET/POST /orders/new), the SKU lookup and my orders (/orders); one order and its cancel
are in order_page.py, the warehouse's dispatch in warehouse_views.py, all on this blueprint."""

from __future__ import annotations

import uuid

from flask import Blueprint, current_app, flash, g, redirect, render_template, request, session, url_for
from flask_login import current_user

from nexo.auth.permissions import permission_required
from nexo.extensions import get_db, get_wakeup
from nexo.orders import commands, queries, service
from nexo.orders.client_options import ClientOptions
from nexo.orders.forms import MIN_ROWS, LineRow, OrderForm, check_rows, padded, parse_uuid, read_rows

bp = Blueprint("orders", __name__)

# Who may look at any order besides the salesperson who entered it.
ORDER_VIEWER_PERMISSIONS = ("credit.authorize", "ops.view", "dlq.admin")
REPLAYED_KEY = "orders.replayed"  # the order page says once that a form sent again was the same order
LOOKUP_PAGE = 20  # SKUs per page of the lookup, and on a fresh form
MAX_LOOKUP_PAGES = 500  # 10,000 matches: enough to browse, past that a longer prefix finds it
# What the 503 page of an outage says on the order form (registered by nexo/orders/__init__.py).
RETRY_ADVICE = (
    "La base de datos no responde y no sabemos si el pedido llegó a guardarse. En unos segundos confirmá "
    "el mismo formulario otra vez (con el botón de abajo): si ya se había guardado vas a ver ese mismo "
    "pedido, nunca uno duplicado."
)


@bp.route("/orders/new", methods=["GET", "POST"])
@permission_required("orders.create")
def new_order():
    """Show a fresh order form, or take a posted one through create_order (CU-01)."""
    if request.method == "GET":
        rows = request.args.get("rows", type=int) or MIN_ROWS
        return _render_form(OrderForm(formdata=None), str(uuid.uuid4()), padded([], min(max(rows, MIN_ROWS), commands.MAX_LINES)))
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
    result = service.create_order(get_db(), cmd, get_wakeup())
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
    typed = sorted({row.normalised_sku for row in rows if row.normalised_sku and not row.error})
    with get_db().reading() as conn:
        client_options = _client_options().html(conn, form.client_id.data)  # first: it reads the version
        context = {
            "warehouses": queries.warehouses(conn),
            "catalog": queries.catalog_of(conn, typed)
            if request.method == "POST"
            else queries.find_skus(conn, "", limit=LOOKUP_PAGE),
        }
    return render_template(
        "orders/new.html",
        form=form,
        request_id=request_id,
        rows=rows,
        errors=errors or {},
        problems=problems,
        more_rows=min(len(rows) + MIN_ROWS, commands.MAX_LINES),
        max_rows=commands.MAX_LINES,
        client_options=client_options,
        **context,
    ), status


@bp.route("/orders/skus")
@permission_required("orders.create")
def find_skus():
    """SKU lookup: SKUs or product names starting with `q`, with price and availability; a plain GET page."""
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


@bp.route("/orders")
@permission_required("orders.create")
def list_orders():
    """The logged-in salesperson's own orders, newest first."""
    with get_db().reading() as conn:
        orders = queries.orders_of_salesperson(conn, current_user.id)
    return render_template("orders/list.html", orders=orders)


def _client_options() -> ClientOptions:
    """The order form's client select of this process (built by nexo/orders/__init__.py)."""
    return current_app.extensions["nexo.client_options"]
