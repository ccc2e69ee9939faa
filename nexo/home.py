"""The landing page: sends each person to the work their role does."""

from __future__ import annotations

from flask import Blueprint, Flask, redirect, render_template, url_for
from flask_login import current_user

bp = Blueprint("home", __name__)


def init_app(app: Flask) -> None:
    """Register the landing page."""
    app.register_blueprint(bp)


# Where each permission's owner starts their morning, in order of precedence.
START_PAGES = [
    ("orders.create", "orders.new_order"),
    ("credit.authorize", "credit.queue"),
    ("warehouse.view", "handoffs.list_handoffs"),
    ("ops.view", "ops.dashboard"),
]


@bp.route("/")
def index():
    """Redirect to the user's main page, or show a menu when none applies."""
    for permission, endpoint in START_PAGES:
        if current_user.can(permission):
            return redirect(url_for(endpoint))
    return render_template("home.html")
