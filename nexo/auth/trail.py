"""The authentication trail (ADR-018, guarantee 22): one audit row per login, failure, lockout, logout,
revoked session, password change, second factor enrolled, API key first used; each with the client's
address (after TRUSTED_PROXIES, nexo/security.py) and user agent. The owner reads it at /admin/auth-events.
"""

from __future__ import annotations

from flask import has_request_context, request

from nexo import audit
from nexo.db import Conn

LOGIN = "auth.login"
LOGIN_FAILED = "auth.login_failed"
LOCKED_OUT = "auth.locked_out"
LOGOUT = "auth.logout"
SESSION_REVOKED = "auth.session_revoked"
PASSWORD_CHANGED = "auth.password_changed"
PASSWORD_RESET = "auth.password_reset"
MFA_ENROLLED = "auth.mfa_enrolled"
MFA_FAILED = "auth.mfa_failed"
USER_CREATED = "auth.user_created"
USER_DEACTIVATED = "auth.user_deactivated"
USER_ACTIVATED = "auth.user_activated"
ROLES_CHANGED = "auth.roles_changed"
EMAIL_CHANGED = "auth.email_changed"
API_KEY_FIRST_USED = "api_key.first_used"

# What the owner's page offers as filters, with the words it shows for each.
LABELS = {
    LOGIN: "Ingreso",
    LOGIN_FAILED: "Ingreso fallido",
    LOCKED_OUT: "Usuario bloqueado por intentos",
    LOGOUT: "Salida",
    SESSION_REVOKED: "Sesiones cerradas",
    PASSWORD_CHANGED: "Contraseña cambiada",
    PASSWORD_RESET: "Contraseña restablecida",
    MFA_ENROLLED: "Segundo factor activado",
    MFA_FAILED: "Código de segundo factor incorrecto",
    USER_CREATED: "Usuario creado",
    USER_DEACTIVATED: "Usuario desactivado",
    USER_ACTIVATED: "Usuario reactivado",
    ROLES_CHANGED: "Roles cambiados",
    EMAIL_CHANGED: "Correo cambiado",
    API_KEY_FIRST_USED: "Clave de API usada por primera vez",
}


def client() -> dict:
    """The client's address and user agent of the current request (empty outside one)."""
    if not has_request_context():
        return {"client_addr": None, "user_agent": None}
    return {"client_addr": request.remote_addr or "unknown", "user_agent": (request.user_agent.string or "")[:300]}


def record(conn: Conn, action: str, *, actor: str, user_id: int | None, details: dict | None = None) -> None:
    """One trail row in the caller's transaction, naming the user it is about (or '-' for an unknown one)."""
    audit.append(
        conn,
        actor=actor,
        action=action,
        object_type="app_user",
        object_id=user_id if user_id is not None else "-",
        details={**client(), **(details or {})},
    )
