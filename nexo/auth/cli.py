"""`flask users create`: add a user for a real deployment."""

from __future__ import annotations

import click
from flask import Blueprint

from nexo.auth import email_address, passwords, trail
from nexo.auth.accounts import Done, Invalid
from nexo.auth.service import create_user
from nexo.extensions import get_db

bp = Blueprint("users", __name__, cli_group="users")


@bp.cli.command("create")
@click.argument("username")
@click.option("--name", "full_name", required=True, help="Nombre visible.")
@click.option("--role", "roles", multiple=True, required=True, help="ventas, credito, deposito o dueno (se puede repetir).")
@click.option("--email", default="", help="Correo para los avisos (opcional).")
@click.password_option()
def create(username: str, full_name: str, roles: tuple[str, ...], email: str, password: str) -> None:
    """Create USERNAME with the given roles; the password is asked for twice."""
    if problem := passwords.weakness(password, username=username):
        raise click.UsageError(f"weak password: {problem}")
    if email_address.problem(email.strip()):
        raise click.UsageError(f"--email {email!r} is not an address like name@example.com")
    with get_db().transaction() as tx:
        known = {r["name"] for r in tx.execute("SELECT name FROM role").fetchall()}
        unknown = set(roles) - known
        if unknown:
            raise click.UsageError(f"unknown role(s): {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        if tx.execute("SELECT 1 FROM app_user WHERE username = %s", [username.lower()]).fetchone():
            raise click.UsageError(f"user {username!r} already exists")
        user_id = create_user(tx.conn, username, full_name, passwords.hash_password(password), list(roles))
        trail.record(
            tx.conn,
            trail.USER_CREATED,
            actor="cli",
            user_id=user_id,
            details={"username": username.lower(), "roles": list(roles)},
        )
        if email.strip():
            tx.execute("UPDATE app_user SET email = %s WHERE id = %s", [email.strip(), user_id])
        tx.commit()
    click.echo(f"created user {username} (id {user_id}) with roles {', '.join(roles)}")


@bp.cli.command("set-email")
@click.argument("username")
@click.argument("email", default="")
def set_email(username: str, email: str) -> None:
    """Set USERNAME's address for email notifications; without EMAIL, remove it (no more emails)."""
    match email_address.set_email(get_db(), actor="cli", username=username, address=email):
        case Done():
            click.echo(f"{username}: " + (f"email notifications go to {email.strip()}" if email.strip() else "no email address"))
        case Invalid(errors):
            raise click.UsageError(f"{email!r} is not an address like name@example.com ({errors['email']})")
        case _:
            raise click.UsageError(f"no user {username!r}")
