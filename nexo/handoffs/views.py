"""GET /warehouse: Sergio's page (permission warehouse.view): the sections other packages add (nexo/orders: the
orders to dispatch and the last dispatches), then the handoffs the warehouse system accepted."""

from __future__ import annotations

from flask import Blueprint, render_template, request

from nexo import navigation
from nexo.auth.permissions import permission_required
from nexo.extensions import get_db
from nexo.handoffs import queries

bp = Blueprint("handoffs", __name__)


@bp.route("/warehouse")
@permission_required("warehouse.view")
def list_handoffs():
    """List the handoffs the warehouse system accepted, newest first, with ticket, client and lines."""
    page = max(1, request.args.get("page", 1, type=int) or 1)
    with get_db().reading() as conn:
        rows = queries.delivered_handoffs(conn, limit=queries.PAGE_SIZE, offset=(page - 1) * queries.PAGE_SIZE)
        counts = queries.handoff_counts(conn)
        sections = navigation.sections("handoffs.list_handoffs", conn) if page == 1 else []
    return render_template(
        "handoffs/list.html",
        sections=sections,
        handoffs=rows,
        counts=counts,
        page=page,
        page_size=queries.PAGE_SIZE,
        count_cap=queries.DELIVERED_COUNT_CAP,
    )
