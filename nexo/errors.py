"""Error pages in Spanish that leak nothing: no traceback, no SQL, no internals."""

from __future__ import annotations

import logging

from flask import Blueprint, Flask, current_app, g, make_response, render_template, request
from flask_wtf.csrf import CSRFError
from markupsafe import escape
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException, MethodNotAllowed, RequestURITooLarge

from nexo.db import DatabaseUnavailable
from nexo.form_input import ControlCharacterRefused

bp = Blueprint("errors", __name__)
MAX_URL = 4096  # characters of path and query; scripts/gunicorn_conf.py lets 8190 through to say so here
log = logging.getLogger(__name__)

MESSAGES = {
    400: ("Solicitud inválida", "Revisá los datos del formulario e intentá de nuevo."),
    401: ("Ingreso requerido", "Ingresá con tu usuario para continuar."),
    403: ("Sin permiso", "Tu usuario no tiene permiso para ver esta página."),
    404: ("No encontrado", "La página o el registro que buscás no existe."),
    405: ("Método no permitido", "Esta dirección no acepta esa operación."),
    409: ("Conflicto", "La operación choca con otra que ya se registró."),
    413: ("Demasiado grande", "El formulario enviado es demasiado grande."),
    414: (
        "Dirección demasiado larga",
        "La dirección tiene demasiados datos. Volvé a la página anterior y probá con menos filtros.",
    ),
    422: ("No se pudo procesar", "La operación no se pudo completar con estos datos."),
    429: ("Demasiados intentos", "Esperá unos minutos antes de volver a intentar."),
    500: ("Error interno", "Algo falló de nuestro lado. No se guardó nada a medias; probá de nuevo."),
    503: ("Servicio no disponible", "Un servicio interno no responde. Probá de nuevo en unos minutos."),
}

# What a 503 says when the database stopped answering. A read saved nothing. A write may have been
# cut before or after its commit, so whether it was kept is unknown: the page never says "nothing
# was saved", it says how to find out or how to repeat it safely.
DATABASE_DOWN_READ = "La base de datos no responde. Probá de nuevo en unos segundos."
DATABASE_DOWN_WRITE = (
    "La base de datos no responde, y no sabemos si la operación llegó a guardarse. "
    "Volvé a la página en unos segundos y revisá su estado antes de repetirla."
)

# The last resort when even the error template cannot be rendered: no template, no database.
_BARE_PAGE = (
    '<!doctype html><html lang="es"><head><meta charset="utf-8"><title>{title} · Nexo</title></head>'
    '<body><main><section data-error-status="{status}"><h1>{title}</h1><p>{message}</p>'
    '<p><a href="/">Volver al inicio</a></p></section></main></body></html>'
)


def init_app(app: Flask) -> None:
    """Register the error pages (every status in Spanish, 503 on an outage of Postgres or Redis)."""
    app.register_blueprint(bp)


def advise_retry(app: Flask, endpoint: str, advice: str) -> None:
    """Mark a POST endpoint as safe to repeat after an outage cut it (its 503 page offers to send the same
    form again), with what to tell the person (nexo/orders: the requestId makes a repeat the same order)."""
    app.extensions.setdefault("nexo.retry_advice", {})[endpoint] = advice


def register_error_format(app: Flask, prefix: str, render) -> None:
    """Let a part of the site answer its errors in its own format: render(status, description) for paths
    under prefix (the JSON API answers problem+json, never an HTML page)."""
    app.extensions.setdefault("nexo.error_formats", []).append((prefix, render))


def _own_format(status: int, description: str | None = None):
    for prefix, render in current_app.extensions.get("nexo.error_formats", ()):
        if request.path.startswith(prefix):
            return render(status, description)
    return None


def render_error(status: int, message: str | None = None, **context):
    """The error page for a status, optionally with a more specific message (or the path's own format, see
    register_error_format); it never raises."""
    own = _own_format(status)
    if own is not None:
        return own
    title, default = MESSAGES.get(status, MESSAGES[500])
    message = message or default
    try:
        return render_template("errors/error.html", status=status, title=title, message=message, **context), status
    except Exception as exc:  # e.g. the database went away while the page asked for the user
        log.error("error page for %s could not be rendered (%s); sent the bare one", status, type(exc).__name__)
        page = _BARE_PAGE.format(status=status, title=escape(title), message=escape(message))
        return page, status, {"Content-Type": "text/html; charset=utf-8"}


@bp.app_errorhandler(CSRFError)
def csrf_error(error):
    log.info("CSRF refused on %s: %s", request.path, error.description)
    return render_error(400, "El formulario venció o no es válido. Volvé a abrirlo y envialo de nuevo.", csrf=True)


@bp.app_errorhandler(HTTPException)
def http_error(error: HTTPException):
    if error.code and error.code < 400:
        return error
    own = _own_format(error.code or 500, error.description)
    response = make_response(
        own if own is not None else render_error(error.code or 500, error.description if error.code in (409, 422) else None)
    )
    # A 405 says which methods the address takes (RFC 9110 15.5.6), in our format as in werkzeug's.
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        response.headers["Allow"] = ", ".join(error.valid_methods)
    return response


@bp.before_app_request
def refuse_over_long_urls():
    """414 in the site's own format (problem+json under /api/, a Spanish page elsewhere) for a URL past
    MAX_URL: gunicorn lets lines up to twice that through (limit_request_line), so this answer, not its
    bare HTML, is what an over-long URL gets."""
    if len(request.full_path) > MAX_URL:
        return http_error(RequestURITooLarge())
    return None


def database_down(error):
    log.error("database unavailable: %s", type(error).__name__)
    # From here on this request must not touch the database: the page is drawn without the user's
    # name and without the navigation badges (nexo/auth/__init__.py's _load_user, nexo/navigation.py).
    g.database_unavailable = True
    if request.method in ("GET", "HEAD"):
        return render_error(503, DATABASE_DOWN_READ)
    advice = current_app.extensions.get("nexo.retry_advice", {}).get(request.endpoint)
    if advice:
        # The same fields, requestId included: "confirm again" never depends on the browser's Back
        # button keeping the form (a reloaded form would carry a new requestId).
        return render_error(503, advice, resubmit=list(request.form.items(multi=True)))
    return render_error(503, DATABASE_DOWN_WRITE)


for _exc in DatabaseUnavailable:
    bp.app_errorhandler(_exc)(database_down)


@bp.app_errorhandler(ControlCharacterRefused)
def control_character_refused(error):
    # The last line of nexo/form_input.py: a route sent a control character on to the database.
    log.warning("control character refused before the database on %s %s", request.method, request.endpoint)
    return render_error(
        400, "El formulario tiene caracteres de control no permitidos (por ejemplo un byte nulo). Revisalo y envialo de nuevo."
    )


@bp.app_errorhandler(RedisError)
def redis_down(error):
    log.error("redis unavailable: %s", type(error).__name__)
    return render_error(503, "Un servicio interno (Redis) no responde. Probá de nuevo en unos minutos.")


@bp.app_errorhandler(Exception)
def unexpected(error):
    log.exception("unhandled error on %s %s", request.method, request.path)
    return render_error(500)
