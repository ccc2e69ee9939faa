"""The navigation bar: one link per capability the logged-in person may use; and the sections a package adds
to another's page (the warehouse page shows the orders to dispatch, which are nexo/orders' to know)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask, current_app, g, url_for
from flask_login import current_user

from nexo.db import Conn

log = logging.getLogger(__name__)

# label, endpoint, permissions — a link appears when the user has one of them (the page's own check: a link
# never ends in a 403, ADR-021).
NAV_ITEMS: list[tuple[str, str, tuple[str, ...]]] = [
    ("Nuevo pedido", "orders.new_order", ("orders.create",)),
    ("Mis pedidos", "orders.list_orders", ("orders.create",)),
    # Credit and the owner read every order; the owner reads the queue without its buttons (CONTRACT.md).
    ("Pedidos", "orders.all_orders", ("credit.authorize", "ops.view", "dlq.admin")),
    ("Autorizaciones", "credit.queue", ("credit.authorize", "clients.view")),
    ("Depósito", "handoffs.list_handoffs", ("warehouse.view",)),
    ("Operaciones", "ops.dashboard", ("ops.view",)),
    ("Entregas fallidas", "deadletters.list_dead_letters", ("dlq.admin",)),
    ("Claves de API", "apikeys_admin.list_keys", ("ops.view",)),
    ("Usuarios", "users_admin.list_users", ("users.admin",)),
    ("Ingresos", "users_admin.auth_events", ("users.admin",)),
]


def init_app(app: Flask) -> None:
    """Give every template the menu (`nav_links()`)."""
    app.context_processor(lambda: {"nav_links": nav_links})


def add_badge(app: Flask, endpoint: str, count: Callable[[], int | None]) -> None:
    """Show count() next to a menu link (e.g. the orders waiting for credit); None shows no badge."""
    app.extensions.setdefault("nexo.nav_badges", {})[endpoint] = count


@dataclass(frozen=True)
class Section:
    """Part of a page drawn by another package: its template, and what it reads on the page's connection (called
    with the connection and what the page was asked for, e.g. the warehouse page's `deposit`)."""

    template: str
    load: Callable[..., dict]  # (conn, **asked)


def add_section(app: Flask, endpoint: str, section: Section) -> None:
    """Show `section` on the page of `endpoint`, after what that page shows itself; packages of one layer stay
    apart (scripts/check_layers.py): the page never imports the package that adds the section."""
    app.extensions.setdefault("nexo.page_sections", {}).setdefault(endpoint, []).append(section)


def sections(endpoint: str, conn: Conn, **asked: Any) -> list[dict]:
    """The sections added to a page, loaded on its connection with what the page was asked for: [{"template", "data"}]."""
    added = current_app.extensions.get("nexo.page_sections", {}).get(endpoint, [])
    return [{"template": section.template, "data": section.load(conn, **asked)} for section in added]


def nav_links() -> list[dict]:
    """The links the current user should see, with an optional badge count."""
    if not current_user.is_authenticated:
        return []
    links = []
    # During a database outage (nexo/errors.py) the 503 page shows the links without their counts.
    badges = {} if g.get("database_unavailable") else current_app.extensions.get("nexo.nav_badges", {})
    for label, endpoint, permissions in NAV_ITEMS:
        if any(current_user.can(permission) for permission in permissions):
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
