"""The landing page: sends each person to the work their role does."""

from __future__ import annotations

from flask import Blueprint, Flask, current_app, redirect, render_template, send_from_directory, url_for
from flask_login import current_user

from nexo import auth

bp = Blueprint("home", __name__)


def init_app(app: Flask) -> None:
    """Register the landing page and the icon browsers ask for on every page (no login: it says nothing)."""
    app.register_blueprint(bp)
    auth.allow_anonymous(app, "home.favicon")


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


@bp.route("/favicon.ico")
def favicon():
    """Nexo's icon, so a browser's automatic request is not a 404 on every page."""
    return send_from_directory(current_app.static_folder or "static", "favicon.svg", mimetype="image/svg+xml", max_age=86400)
