"""The permission decorator: anonymous → login page, logged in without the permission → 403."""

from __future__ import annotations

from functools import wraps

from flask import abort
from flask_login import current_user

from nexo.extensions import login_manager


def permission_required(permission: str):
    """Guard a view with one permission."""

    def decorator(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            if not current_user.is_authenticated:
                return login_manager.unauthorized()
            if not current_user.can(permission):
                abort(403)
            return view(*args, **kwargs)

        return wrapped

    return decorator
