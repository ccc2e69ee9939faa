"""Backups of Nexo's own data (ADR-016): base backups, the WAL archive, restore to a time, verify, dumps."""

from __future__ import annotations

from flask import Flask

from nexo.backup import cli


def init_app(app: Flask) -> None:
    """flask backup list | verify | dump | restore-dump."""
    app.register_blueprint(cli.bp)
