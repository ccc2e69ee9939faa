"""The navigation bar: one link per capability the logged-in person may use."""

from __future__ import annotations

import logging
from collections.abc import Callable

from flask import Flask, current_app, g, url_for
from flask_login import current_user

log = logging.getLogger(__name__)

# label, endpoint, permission — a link appears when the user has the permission.
NAV_ITEMS = [
    ("Nuevo pedido", "orders.new_order", "orders.create"),
    ("Mis pedidos", "orders.list_orders", "orders.create"),
    ("Autorizaciones", "credit.queue", "credit.authorize"),
    ("Depósito", "handoffs.list_handoffs", "warehouse.view"),
    ("Operaciones", "ops.dashboard", "ops.view"),
    ("Entregas fallidas", "deadletters.list_dead_letters", "dlq.admin"),
    ("Claves de API", "apikeys_admin.list_keys", "ops.view"),
]


def init_app(app: Flask) -> None:
    """Give every template the menu (`nav_links()`)."""
    app.context_processor(lambda: {"nav_links": nav_links})


def add_badge(app: Flask, endpoint: str, count: Callable[[], int | None]) -> None:
    """Show count() next to a menu link (e.g. the orders waiting for credit); None shows no badge."""
    app.extensions.setdefault("nexo.nav_badges", {})[endpoint] = count


def nav_links() -> list[dict]:
    """The links the current user should see, with an optional badge count."""
    if not current_user.is_authenticated:
        return []
    links = []
    # During a database outage (nexo/errors.py) the 503 page shows the links without their counts.
    badges = {} if g.get("database_unavailable") else current_app.extensions.get("nexo.nav_badges", {})
    for label, endpoint, permission in NAV_ITEMS:
        if current_user.can(permission):
            badge = badges.get(endpoint)
            links.append(
                {"label": label, "url": url_for(endpoint), "endpoint": endpoint, "badge": _count(badge) if badge else None}
            )
    return links


def _count(badge) -> int | None:
    # A badge is never a reason to fail a page: no count rather than an error page.
    try:
        return badge()
    except Exception as exc:
        log.warning("navigation badge unavailable: %s", type(exc).__name__)
        return None
