"""CU-02 credit authorization: the officer's queue of orders over the limit, approve and reject; a client's account
(limit, exposure, payments, past decisions)."""

from __future__ import annotations

from flask import Flask

from nexo import navigation
from nexo.credit import cli, client_views, views


def init_app(app: Flask) -> None:
    """Register the credit queue and its menu badge (the orders waiting for a decision), the client pages and
    `flask clients list`."""
    app.register_blueprint(views.bp)
    app.register_blueprint(cli.bp)
    app.register_blueprint(client_views.bp)
    navigation.add_badge(app, "credit.queue", views.pending_badge)
