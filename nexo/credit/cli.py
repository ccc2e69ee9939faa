"""`flask --app app clients list [TEXT]`: the clients' ids, which integrations put in their orders (README,
Integrations), without a psql of one's own against the server make run keeps."""

from __future__ import annotations

import click
from flask import Blueprint

from nexo.db import contains_pattern
from nexo.extensions import get_db
from nexo.formatting import format_ars

bp = Blueprint("clients_cli", __name__, cli_group="clients")


@bp.cli.command("list")
@click.argument("text", required=False, default="")
def list_clients(text: str) -> None:
    """One line per client whose name contains TEXT (all without it), by name: id, name, tier, credit limit."""
    with get_db().reading() as conn:
        rows = conn.execute(
            "SELECT id, name, tier, credit_limit_cents FROM client WHERE name ILIKE %s ORDER BY name, id",
            [contains_pattern(text)],
        ).fetchall()
    for row in rows:
        click.echo(f"{row['id']}\t{row['name']}\t{row['tier']}\t{format_ars(row['credit_limit_cents'])}")
    if not rows:
        click.echo(f"no client's name contains {text!r}" if text else "no clients yet", err=True)
