"""Accounts the owner manages and passwords people change (ADR-018): each change one transaction with
its trail row; every change that takes access away ends the user's sessions in that same transaction."""

from __future__ import annotations

from dataclasses import dataclass

from werkzeug.security import check_password_hash

from nexo.auth import passwords, sessions, trail
from nexo.auth.service import User, create_user
from nexo.db import Database
from nexo.settings import SecuritySettings

ROLES = ("ventas", "credito", "deposito", "dueno")


@dataclass(frozen=True)
class Done:
    """The change was made; a new one-time password when it made one (shown once)."""

    one_time_password: str | None = None


@dataclass(frozen=True)
class Invalid:
    """The request cannot be done: errors per field, in Spanish."""

    errors: dict[str, str]


@dataclass(frozen=True)
class NotFound:
    """No such user."""


Result = Done | Invalid | NotFound


def _roles_problem(roles: list[str]) -> str | None:
    if not roles:
        return "Elegí al menos un rol."
    unknown = set(roles) - set(ROLES)
    return f"Rol desconocido: {', '.join(sorted(unknown))}." if unknown else None


def create_account(db: Database, *, actor: User, username: str, full_name: str, roles: list[str]) -> Result:
    """A new user with a one-time password they must change at first login."""
    username, full_name = username.strip().lower(), full_name.strip()
    errors = {}
    if not username or not username.replace(".", "").replace("-", "").replace("_", "").isalnum() or len(username) > 64:
        errors["username"] = "Usá letras, números, punto, guion o guion bajo (hasta 64)."
    if not full_name or len(full_name) > 120:
        errors["name"] = "Ingresá el nombre (hasta 120 caracteres)."
    if problem := _roles_problem(roles):
        errors["roles"] = problem
    if errors:
        return Invalid(errors)
    password = passwords.one_time_password()
    with db.transaction() as tx:
        if tx.execute("SELECT 1 FROM app_user WHERE username = %s", [username]).fetchone():
            return Invalid({"username": "Ya existe un usuario con ese nombre."})
        user_id = create_user(tx.conn, username, full_name, passwords.hash_password(password), roles, must_change_password=True)
        trail.record(
            tx.conn, trail.USER_CREATED, actor=actor.username, user_id=user_id, details={"username": username, "roles": roles}
        )
        tx.commit()
    return Done(one_time_password=password)


def _user_id(tx, username: str) -> int | None:
    row = tx.execute("SELECT id FROM app_user WHERE username = %s FOR UPDATE", [username.strip().lower()]).fetchone()
    return row["id"] if row else None


def set_active(db: Database, *, actor: User, username: str, active: bool) -> Result:
    """Deactivate (ending every session at once, for good) or reactivate a user."""
    with db.transaction() as tx:
        user_id = _user_id(tx, username)
        if user_id is None:
            return NotFound()
        if user_id == actor.id and not active:
            return Invalid({"username": "No podés desactivar tu propio usuario."})
        tx.execute("UPDATE app_user SET active = %s WHERE id = %s", [active, user_id])
        ended = 0 if active else sessions.end_all_of_user(tx.conn, user_id, "deactivated")
        action = trail.USER_ACTIVATED if active else trail.USER_DEACTIVATED
        trail.record(tx.conn, action, actor=actor.username, user_id=user_id, details={"sessions_ended": ended})
        tx.commit()
    return Done()


def reset_password(db: Database, *, actor: User, username: str) -> Result:
    """A new one-time password: the old one stops working and every session of the user ends."""
    password = passwords.one_time_password()
    with db.transaction() as tx:
        user_id = _user_id(tx, username)
        if user_id is None:
            return NotFound()
        tx.execute(
            "UPDATE app_user SET password_hash = %s, must_change_password = true, password_changed_at = now() WHERE id = %s",
            [passwords.hash_password(password), user_id],
        )
        ended = sessions.end_all_of_user(tx.conn, user_id, "password_reset")
        trail.record(tx.conn, trail.PASSWORD_RESET, actor=actor.username, user_id=user_id, details={"sessions_ended": ended})
        tx.commit()
    return Done(one_time_password=password)


def set_roles(db: Database, *, actor: User, username: str, roles: list[str]) -> Result:
    """Replace a user's roles; their sessions end (the next login carries the new permissions)."""
    if problem := _roles_problem(roles):
        return Invalid({"roles": problem})
    with db.transaction() as tx:
        user_id = _user_id(tx, username)
        if user_id is None:
            return NotFound()
        if user_id == actor.id and "dueno" not in roles:
            return Invalid({"roles": "No podés quitarte el rol de dueño a vos mismo."})
        tx.execute("DELETE FROM user_role WHERE user_id = %s", [user_id])
        for role in sorted(set(roles)):
            tx.execute("INSERT INTO user_role (user_id, role_name) VALUES (%s, %s)", [user_id, role])
        ended = sessions.end_all_of_user(tx.conn, user_id, "roles_changed")
        trail.record(
            tx.conn,
            trail.ROLES_CHANGED,
            actor=actor.username,
            user_id=user_id,
            details={"roles": sorted(set(roles)), "sessions_ended": ended},
        )
        tx.commit()
    return Done()


def change_password(db: Database, *, user: User, current: str, new: str, confirm: str) -> Result:
    """The user's own change: the current password required; their other sessions end."""
    errors = {}
    if new != confirm:
        errors["new_password_confirm"] = "Las dos contraseñas nuevas no coinciden."
    elif problem := passwords.weakness(new, username=user.username):
        errors["new_password"] = problem
    with db.transaction() as tx:
        row = tx.execute("SELECT password_hash FROM app_user WHERE id = %s AND active FOR UPDATE", [user.id]).fetchone()
        if row is None:
            return NotFound()
        if not check_password_hash(row["password_hash"], current):
            errors["current_password"] = "La contraseña actual no es correcta."
        elif not errors and check_password_hash(row["password_hash"], new):
            errors["new_password"] = "La contraseña nueva tiene que ser distinta de la actual."
        if errors:
            return Invalid(errors)
        tx.execute(
            "UPDATE app_user SET password_hash = %s, must_change_password = false, password_changed_at = now() WHERE id = %s",
            [passwords.hash_password(new), user.id],
        )
        ended = sessions.end_all_of_user(tx.conn, user.id, "password_changed", keep=user.session_id)
        trail.record(
            tx.conn, trail.PASSWORD_CHANGED, actor=user.username, user_id=user.id, details={"other_sessions_ended": ended}
        )
        tx.commit()
    return Done()


def close_other_sessions(db: Database, *, user: User) -> int:
    """ "Cerrar mis otras sesiones": end every session of the user but this one; return how many."""
    with db.transaction() as tx:
        ended = sessions.end_all_of_user(tx.conn, user.id, "closed_by_user", keep=user.session_id)
        trail.record(tx.conn, trail.SESSION_REVOKED, actor=user.username, user_id=user.id, details={"sessions_ended": ended})
        tx.commit()
    return ended


def purge_sessions(db: Database, security: SecuritySettings) -> int:
    """Delete the sessions over SESSION_KEEP_DAYS past their end (the retention job); return how many."""
    limits = sessions.Limits(security.session_idle_s, security.session_max_s, security.session_touch_s)
    with db.transaction() as tx:
        deleted = sessions.purge(tx.conn, keep_days=security.session_keep_days, limits=limits)
        tx.commit()
    return deleted
