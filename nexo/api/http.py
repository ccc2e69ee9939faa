"""JSON responses of the API (UUIDs and timestamps as strings; timestamps RFC 3339)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime

from flask import Response


def json_response(body, status: int = 200, headers: dict | None = None) -> Response:
    """An application/json response."""
    response = Response(json.dumps(body, default=_default, ensure_ascii=False), status=status, mimetype="application/json")
    response.headers.update(headers or {})
    return response


def _default(value):
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(type(value).__name__)
