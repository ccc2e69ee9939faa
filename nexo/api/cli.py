"""`flask apikeys create NAME --user USERNAME [--scope P …] [--expires-in-days N]`, `flask apikeys rotate NAME`
and `flask apikeys revoke NAME` (CONTRACT.md, Orders API; scopes and expiry: ADR-018)."""

from __future__ import annotations

import getpass

import click
from flask import Blueprint

from nexo.api import keys
from nexo.extensions import get_db

bp = Blueprint("apikeys", __name__, cli_group="apikeys")


def _actor() -> str:
    # The audit row names who ran the command on the server (the API key has no person of its own).
    try:
        return "cli:" + getpass.getuser()
    except (KeyError, OSError):
        return "cli"


@bp.cli.command("create")
@click.argument("name")
@click.option("--user", "username", required=True, help="The Nexo user the key acts as.")
@click.option("--scope", "scopes", multiple=True, help="Only this permission of the user (repeatable; default: all of them).")
@click.option("--expires-in-days", type=int, default=None, help="The key stops working after this many days.")
def create(name: str, username: str, scopes: tuple[str, ...], expires_in_days: int | None) -> None:
    """Create a key NAME acting as USERNAME; print it once, alone on the last line."""
    try:
        key = keys.create_key(
            get_db(), name=name, username=username, actor=_actor(), scopes=list(scopes) or None, expires_in_days=expires_in_days
        )
    except keys.ApiKeyError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"created API key {name!r} for {username}; it is shown only now, store it safely:")
    click.echo(key)


@bp.cli.command("rotate")
@click.argument("name")
def rotate(name: str) -> None:
    """Replace the live key NAME by a new one (same user, scopes, expiry); the old one stops at once."""
    try:
        key = keys.rotate_key(get_db(), name=name, actor=_actor())
    except keys.ApiKeyError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"rotated API key {name!r}; the old key no longer works; the new one is shown only now:")
    click.echo(key)


@bp.cli.command("revoke")
@click.argument("name")
def revoke(name: str) -> None:
    """Revoke the live key NAME; requests with it get 401 from now on."""
    try:
        keys.revoke_key(get_db(), name=name, actor=_actor())
    except keys.ApiKeyError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"revoked API key {name!r}")
