"""The owner's pages (`users.admin`): users (create, roles, deactivate, reset password) and the
authentication trail with filters."""

from __future__ import annotations

from datetime import datetime, timedelta

from flask import Blueprint, abort, flash, redirect, render_template, request, session, url_for
from flask_login import current_user

from nexo.auth import accounts, email_address, trail
from nexo.auth.forms import ROLE_LABELS, NewUserForm, RolesForm
from nexo.auth.permissions import permission_required
from nexo.extensions import get_db
from nexo.formatting import ARGENTINA

bp = Blueprint("users_admin", __name__)
TRAIL_PAGE = 200


def _show_once(username: str, password: str) -> None:
    # Shown on the page the 303 leads to, then gone (CONTRACT.md): popped by that GET.
    session["one_time_password"] = {"username": username, "password": password}


@bp.route("/admin/users")
@permission_required("users.admin")
def list_users():
    """Every user with their roles and state, the new-user form, and a one-time password just made."""
    return render_template(
        "admin/users.html",
        users=_all_users(),
        form=NewUserForm(),
        role_labels=ROLE_LABELS,
        one_time=session.pop("one_time_password", None),
    )


@bp.route("/admin/users", methods=["POST"])
@permission_required("users.admin")
def create_user():
    """Create a user with a one-time password (shown once on the page this redirects to)."""
    form = NewUserForm()
    if not form.validate_on_submit():
        return _users_again(form, {}), 400
    username = (form.username.data or "").strip().lower()
    result = accounts.create_account(
        get_db(),
        actor=current_user._get_current_object(),
        username=username,
        full_name=form.name.data or "",
        roles=form.roles.data or [],
    )
    match result:
        case accounts.Done(password):
            _show_once(username, password or "")
            return redirect(url_for("users_admin.list_users"), code=303)
        case accounts.Invalid(errors):
            return _users_again(form, errors), 400
    raise AssertionError(result)


def _users_again(form: NewUserForm, errors: dict[str, str]):
    for name, message in errors.items():
        getattr(form, name).errors = [message]
    flash("Revisá los datos del usuario nuevo.", "error")
    return render_template("admin/users.html", users=_all_users(), form=form, role_labels=ROLE_LABELS, one_time=None)


def _all_users() -> list[dict]:
    with get_db().reading() as conn:
        return conn.execute(
            """
            SELECT u.username, u.full_name, u.email, u.active, u.must_change_password, u.totp_enrolled_at IS NOT NULL AS mfa,
                   coalesce(array_agg(ur.role_name ORDER BY ur.role_name) FILTER (WHERE ur.role_name IS NOT NULL), '{}') AS roles,
                   (SELECT count(*) FROM user_session s WHERE s.user_id = u.id AND s.ended_at IS NULL) AS open_sessions
              FROM app_user u LEFT JOIN user_role ur ON ur.user_id = u.id
             GROUP BY u.id ORDER BY u.username
            """
        ).fetchall()


def _after(result: accounts.Result, username: str, done_message: str):
    match result:
        case accounts.Done(password):
            if password:
                _show_once(username.strip().lower(), password)
            flash(done_message, "info")
            return redirect(url_for("users_admin.list_users"), code=303)
        case accounts.Invalid(errors):
            flash(" ".join(errors.values()), "error")
            return redirect(url_for("users_admin.list_users"), code=303)
        case accounts.NotFound():
            abort(404)
    raise AssertionError(result)


@bp.route("/admin/users/<username>/deactivate", methods=["POST"])
@permission_required("users.admin")
def deactivate(username: str):
    """Switch a user off; their sessions end at once."""
    result = accounts.set_active(get_db(), actor=current_user._get_current_object(), username=username, active=False)
    return _after(result, username, f"Desactivamos a {username} y cerramos sus sesiones.")


@bp.route("/admin/users/<username>/activate", methods=["POST"])
@permission_required("users.admin")
def activate(username: str):
    """Switch a user on again (their old sessions stay ended)."""
    result = accounts.set_active(get_db(), actor=current_user._get_current_object(), username=username, active=True)
    return _after(result, username, f"Reactivamos a {username}; tiene que volver a ingresar.")


@bp.route("/admin/users/<username>/reset-password", methods=["POST"])
@permission_required("users.admin")
def reset_password(username: str):
    """A new one-time password for the user; the old one and every session end."""
    result = accounts.reset_password(get_db(), actor=current_user._get_current_object(), username=username)
    return _after(result, username, f"Restablecimos la contraseña de {username} y cerramos sus sesiones.")


@bp.route("/admin/users/<username>/roles", methods=["POST"])
@permission_required("users.admin")
def set_roles(username: str):
    """Replace the user's roles; their sessions end."""
    form = RolesForm()
    if not form.validate_on_submit():
        abort(400)
    result = accounts.set_roles(
        get_db(), actor=current_user._get_current_object(), username=username, roles=form.roles.data or []
    )
    return _after(result, username, f"Cambiamos los roles de {username} y cerramos sus sesiones.")


@bp.route("/admin/users/<username>/email", methods=["POST"])
@permission_required("users.admin")
def set_email(username: str):
    """Store or remove the address the user's email notifications go to (CSRF is checked globally)."""
    address = request.form.get("email", "")[: email_address.MAX_LENGTH + 1]
    result = email_address.set_email(get_db(), actor=current_user.username, username=username, address=address)
    done = f"Guardamos el correo de {username}." if address.strip() else f"{username} ya no recibe avisos por correo."
    return _after(result, username, done)


@bp.route("/admin/auth-events")
@permission_required("users.admin")
def auth_events():
    """The authentication trail, newest first, filtered by kind of event, user and day."""
    action = request.args.get("action", "")
    username = request.args.get("user", "").strip().lower()
    day = request.args.get("day", "")
    where: list[str] = ["(a.action LIKE 'auth.%%' OR a.action LIKE 'api_key.%%')"]
    params: list[object] = []
    if action in trail.LABELS:
        where.append("a.action = %s")
        params.append(action)
    if username:
        where.append("a.object_type = 'app_user' AND a.object_id = (SELECT id::text FROM app_user WHERE username = %s)")
        params.append(username)
    try:
        start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=ARGENTINA) if day else None
    except ValueError:
        start = None
    if start is not None:
        where.append("a.occurred_at >= %s AND a.occurred_at < %s")
        params += [start, start + timedelta(days=1)]
    with get_db().reading() as conn:
        rows = conn.execute(
            f"SELECT a.id, a.occurred_at, a.actor, a.action, a.object_id, a.details FROM audit_log a"
            f" WHERE {' AND '.join(where)} ORDER BY a.occurred_at DESC, a.id DESC LIMIT %s",
            [*params, TRAIL_PAGE],
        ).fetchall()
    return render_template(
        "admin/auth_events.html", events=rows, labels=trail.LABELS, action=action, user=username, day=day if start else ""
    )
