"""The owner's page of API keys: who has one, since when, last used, revoked. Never a key or its hash."""

from __future__ import annotations

from flask import Blueprint, render_template

from nexo.api import repository as repo
from nexo.auth.permissions import permission_required
from nexo.extensions import get_db

bp = Blueprint("apikeys_admin", __name__)


@bp.route("/admin/api-keys")
@permission_required("ops.view")
def list_keys():
    """Every API key with its user, creation, last use and revocation (guarantee 18)."""
    with get_db().reading() as conn:
        keys = repo.all_keys(conn)
    return render_template("api/keys.html", keys=keys)
