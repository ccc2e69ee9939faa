"""Transactional outbox (ADR-004): events written with the order, delivered later by the relay."""

from __future__ import annotations

from flask import Flask

from nexo.extensions import get_redis
from nexo.outbox.wakeup import Wakeup
from nexo.settings import Settings


def init_app(app: Flask, settings: Settings) -> None:
    """The relay wake-up the use cases ring after a commit (nexo.extensions.get_wakeup() in views).

    Rung from a thread of its own: an order's answer never waits for Redis (nexo/outbox/wakeup.py)."""
    with app.app_context():
        app.extensions["nexo.wakeup"] = Wakeup(get_redis(), settings, in_background=True)
