"""Dead-letter admin pages (ADR-010, guarantee 11): list, detail, replay, discard, groups. Behind dlq.admin."""

from __future__ import annotations

import json
from typing import Any, assert_never

from flask import Blueprint, abort, current_app, flash, make_response, redirect, render_template, request, url_for
from flask_login import current_user

from nexo.auth.permissions import permission_required
from nexo.deadletters import keycheck, queries, service
from nexo.deadletters.forms import BulkForm, CheckKeyForm, DiscardForm, ListQuery, ReplayForm
from nexo.deadletters.fresh_login import fresh_login_required
from nexo.deadletters.queries import DESTINATIONS, ListFilter
from nexo.errors import render_error
from nexo.extensions import get_db, get_wakeup
from nexo.formatting import format_local
from nexo.states import DeadLetterStatus

bp = Blueprint("deadletters", __name__, url_prefix="/admin/dead-letters")
PERMISSION = "dlq.admin"


@bp.context_processor
def helpers():
    """Labels and the payload helper for the dead-letter templates only (a blueprint context processor)."""
    return {
        "pretty": pretty,
        "CANDIDATE_CAP": service.CANDIDATE_CAP,
    }


def pretty(payload) -> str:
    """A JSON payload indented for reading (rendered escaped like any other text)."""
    return json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True)


def _filter_from(query: ListQuery, **overrides) -> ListFilter:
    values = {
        "destinations": (query.destination.data,) if query.destination.data else DESTINATIONS,
        "status": DeadLetterStatus(query.status.data) if query.status.data else None,  # one of the select's choices
        "signature": query.signature.data or None,
        "client_id": query.client.data or None,
        "failed_from": query.from_date.data,
        "failed_to": query.to_date.data,
    }
    return ListFilter(**{**values, **overrides})


@bp.route("")
@permission_required(PERMISSION)
def list_dead_letters():
    """Dead letters, newest failure first, filtered and paginated; X-Total-Count (and X-Truncated)."""
    query = ListQuery(request.args)
    if not query.validate():
        return render_template("deadletters/list.html", query=query, page=None, clients=[]), 400
    result = service.list_dead_letters(get_db(), _filter_from(query), page=query.page.data or 1, size=query.size.data or 50)

    def page_url(number: int) -> str:
        """This list, same filters, another page."""
        args: dict[str, Any] = {**request.args.to_dict(), "page": number}  # url_for's own keywords typed apart
        return url_for("deadletters.list_dead_letters", **args)

    response = make_response(
        render_template("deadletters/list.html", query=query, page=result, clients=result.clients, page_url=page_url)
    )
    response.headers["X-Total-Count"] = str(result.total)
    if result.truncated:
        response.headers["X-Truncated"] = "true"
    return response


def _render_detail(dead_letter_id: int, *, status: int = 200, audit_view: bool = True, **forms):
    detail = service.view_dead_letter(get_db(), dead_letter_id, current_user.username, audit_view=audit_view)
    if detail is None:
        abort(404)
    forms = {
        "replay_form": ReplayForm(formdata=None),
        "discard_form": DiscardForm(formdata=None),
        "check_form": CheckKeyForm(formdata=None),
        **forms,
    }
    return render_template("deadletters/detail.html", detail=detail, d=detail.dead_letter, **forms), status


@bp.route("/<int:dead_letter_id>")
@permission_required(PERMISSION)
def detail(dead_letter_id: int):
    """Payload, every attempt, the order behind it and the audit trail; the view itself is audited."""
    return _render_detail(dead_letter_id)


def _after_action(result: service.ActionResult, done_message: str):
    match result:
        case service.Done(dead_letter_id=dead_letter_id):
            flash(done_message, "info")
            return redirect(url_for("deadletters.detail", dead_letter_id=dead_letter_id), code=303)
        case service.NotFound():
            abort(404)
        case service.AlreadyResolved(
            status=DeadLetterStatus.RESOLVED | DeadLetterStatus.DISCARDED as status, resolved_by=by, resolved_at=at
        ):
            verb = "reprocesó" if status == DeadLetterStatus.RESOLVED else "descartó"
            return render_error(409, f"Esta entrega ya no está pendiente: ya la {verb} {by} el {format_local(at, seconds=True)}.")
        case service.AlreadyResolved() | service.EventNotFailed():
            return render_error(409, "El aviso de esta entrega ya no está fallido; recargá la página antes de decidir.")
    assert_never(result)


@bp.route("/<int:dead_letter_id>/replay", methods=["POST"])
@permission_required(PERMISSION)
@fresh_login_required("deadletters.detail")
def replay(dead_letter_id: int):
    """Send the same event (same Idempotency-Key) back to the relay; 409 when it is not pending."""
    form = ReplayForm()
    if not form.validate_on_submit():
        return _render_detail(dead_letter_id, status=400, audit_view=False, replay_form=form)
    result = service.replay(get_db(), dead_letter_id, current_user.username, form.note.data, get_wakeup())
    return _after_action(result, "Entrega reprocesada: el evento volvió a la cola y el relay lo enviará con la misma clave.")


@bp.route("/<int:dead_letter_id>/discard", methods=["POST"])
@permission_required(PERMISSION)
@fresh_login_required("deadletters.detail")
def discard(dead_letter_id: int):
    """Close the dead letter without delivering; the reason is required (400 without it)."""
    form = DiscardForm()
    if not form.validate_on_submit():
        return _render_detail(dead_letter_id, status=400, audit_view=False, discard_form=form)
    # DataRequired: a valid form has a reason.
    result = service.discard(get_db(), dead_letter_id, current_user.username, form.reason.data or "")
    return _after_action(result, "Entrega descartada. El pedido muestra quién la descartó y por qué.")


@bp.route("/<int:dead_letter_id>/check-key", methods=["POST"])
@permission_required(PERMISSION)
def check_key(dead_letter_id: int):
    """Ask the destination whether it already applied this event's Idempotency-Key (audited)."""
    if not CheckKeyForm().validate_on_submit():
        abort(400)
    answer = keycheck.check_key(get_db(), current_app.config["NEXO_SETTINGS"], dead_letter_id, current_user.username)
    if answer is None:
        abort(404)
    flash("Consulta al destino registrada; la respuesta está abajo.", "info")
    return redirect(url_for("deadletters.detail", dead_letter_id=dead_letter_id), code=303)


@bp.route("/groups")
@permission_required(PERMISSION)
def groups():
    """Pending dead letters counted per destination and error signature."""
    query = ListQuery(request.args)
    if not query.validate():
        abort(400)
    destinations = (query.destination.data,) if query.destination.data else DESTINATIONS
    return render_template("deadletters/groups.html", query=query, groups=service.group_counts(get_db(), destinations))


def _render_preview(form: BulkForm, ids: list[int], more: bool, status: int = 200):
    rows = service.summaries(get_db(), form.destination.data, ids)
    return render_template(
        "deadletters/bulk_preview.html", form=form, rows=rows, count=len(ids), more=more, cap=service.BULK_CAP
    ), status


@bp.route("/bulk")
@permission_required(PERMISSION)
def bulk_preview():
    """Say how many pending dead letters a group action would touch, and carry exactly those ids."""
    query = ListQuery(request.args)
    action = request.args.get("action", "replay")
    if not query.validate() or action not in ("replay", "discard"):
        abort(400)
    if not query.destination.data:
        # ADR-010, isolation per destination: a group action never spans two destinations.
        return render_error(400, "Elegí un destino: una acción en grupo nunca mezcla destinos.")
    ids, more = service.preview_group(get_db(), _filter_from(query, status=DeadLetterStatus.PENDING))
    form = BulkForm(
        formdata=None,
        action=action,
        destination=query.destination.data,
        signature=query.signature.data or "",
        ids=",".join(map(str, ids)),
        expected_count=len(ids),
    )
    return _render_preview(form, ids, more)


@bp.route("/bulk", methods=["POST"])
@permission_required(PERMISSION)
@fresh_login_required("deadletters.groups")
def bulk_apply():
    """Replay or discard the previewed ids (never rows that appeared after the preview); 303 to the groups."""
    form = BulkForm()
    if not form.validate_on_submit():
        ids = getattr(form, "id_list", [])
        return _render_preview(form, ids, False, status=400)
    note = form.reason.data or None
    result = service.act_on_group(
        get_db(),
        action=form.action.data,
        destination=form.destination.data,
        ids=form.id_list,
        actor=current_user.username,
        signature=form.signature.data or None,
        note=note,
        wakeup=get_wakeup(),
    )
    if isinstance(result, service.GroupChanged):
        return render_error(409, "Alguna entrega del grupo cambió de estado; no se tocó ninguna. Volvé a la vista previa.")
    verb = "reprocesaron" if form.action.data == "replay" else "descartaron"
    flash(
        f"Se {verb} {len(result.touched)} entregas."
        + (f" {result.skipped} ya no estaban pendientes y no se tocaron." if result.skipped else ""),
        "info",
    )
    return redirect(url_for("deadletters.groups", destination=form.destination.data), code=303)


def pending_badge() -> int | None:
    """Pending dead letters for the navigation (ADR-004: a dead letter is not a state nobody reads)."""
    with get_db().reading() as conn:
        return queries.pending_count(conn) or None
