"""GET /warehouse: Sergio's page (permission warehouse.view): the sections other packages add (nexo/orders: the
orders to dispatch and the last dispatches), then the handoffs received that are still to prepare; all of one
deposit with `?deposit=`."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from nexo import navigation
from nexo.auth.permissions import permission_required
from nexo.errors import render_error
from nexo.extensions import get_db
from nexo.handoffs import queries

bp = Blueprint("handoffs", __name__)


@bp.route("/warehouse")
@permission_required("warehouse.view")
def list_handoffs():
    """The handoffs received and not yet dispatched, oldest first (the warehouse works first in, first out), with
    ticket, client and lines; of one deposit with `?deposit=CEN` (every deposit without it)."""
    page = max(1, request.args.get("page", 1, type=int) or 1)
    deposit = request.args.get("deposit", "").strip().upper() or None
    with get_db().reading() as conn:
        warehouses = queries.warehouses(conn)
        if deposit is not None and deposit not in {w["id"] for w in warehouses}:
            names = " o ".join(w["name"] for w in warehouses)
            return render_error(400, f"No hay ningún depósito con el código «{deposit[:20]}». Elegí {names}.")
        offset = (page - 1) * queries.PAGE_SIZE
        rows = queries.handoffs_to_prepare(conn, deposit, limit=queries.PAGE_SIZE, offset=offset)
        counts = queries.handoff_counts(conn, deposit)
        sections = navigation.sections("handoffs.list_handoffs", conn, deposit=deposit) if page == 1 else []
    return render_template(
        "handoffs/list.html",
        sections=sections,
        handoffs=rows,
        counts=counts,
        page=page,
        page_size=queries.PAGE_SIZE,
        count_cap=queries.TO_PREPARE_COUNT_CAP,
        warehouses=warehouses,
        deposit=deposit,
    )
