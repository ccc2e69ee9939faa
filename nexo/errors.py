"""Error pages in Spanish that leak nothing: no traceback, no SQL, no internals."""

from __future__ import annotations

import logging

from flask import Blueprint, render_template, request
from flask_wtf.csrf import CSRFError
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from nexo.db import DatabaseUnavailable

bp = Blueprint("errors", __name__)
log = logging.getLogger(__name__)

MESSAGES = {
    400: ("Solicitud inválida", "Revisá los datos del formulario e intentá de nuevo."),
    401: ("Ingreso requerido", "Ingresá con tu usuario para continuar."),
    403: ("Sin permiso", "Tu usuario no tiene permiso para ver esta página."),
    404: ("No encontrado", "La página o el registro que buscás no existe."),
    405: ("Método no permitido", "Esta dirección no acepta esa operación."),
    409: ("Conflicto", "La operación choca con otra que ya se registró."),
    413: ("Demasiado grande", "El formulario enviado es demasiado grande."),
    422: ("No se pudo procesar", "La operación no se pudo completar con estos datos."),
    429: ("Demasiados intentos", "Esperá unos minutos antes de volver a intentar."),
    500: ("Error interno", "Algo falló de nuestro lado. No se guardó nada a medias; probá de nuevo."),
    503: ("Servicio no disponible", "Un servicio interno no responde. No se guardó nada; probá de nuevo en unos minutos."),
}


def render_error(status: int, message: str | None = None, **context):
    """The error page for a status, optionally with a more specific message."""
    title, default = MESSAGES.get(status, MESSAGES[500])
    return render_template("errors/error.html", status=status, title=title,
                           message=message or default, **context), status


@bp.app_errorhandler(CSRFError)
def csrf_error(error):
    log.info("CSRF refused on %s: %s", request.path, error.description)
    return render_error(400, "El formulario venció o no es válido. Volvé a abrirlo y envialo de nuevo.",
                        csrf=True)


@bp.app_errorhandler(HTTPException)
def http_error(error: HTTPException):
    if error.code and error.code < 400:
        return error
    return render_error(error.code or 500, error.description if error.code in (409, 422) else None)


def database_down(error):
    log.error("database unavailable: %s", type(error).__name__)
    return render_error(503, "La base de datos no responde. No se guardó nada; probá de nuevo en unos minutos.")


for _exc in DatabaseUnavailable:
    bp.app_errorhandler(_exc)(database_down)


@bp.app_errorhandler(RedisError)
def redis_down(error):
    log.error("redis unavailable: %s", type(error).__name__)
    return render_error(503)


@bp.app_errorhandler(Exception)
def unexpected(error):
    log.exception("unhandled error on %s %s", request.method, request.path)
    return render_error(500)
