"""The Nexo morning (CONTRACT.md): demo warehouses, catalog, clients and users."""

from __future__ import annotations

from functools import lru_cache

import click
from flask import Flask
from werkzeug.security import generate_password_hash

from nexo.auth.service import create_user
from nexo.db import Conn, one_row
from nexo.extensions import get_db
from nexo.stock import levels as stock

WAREHOUSES = [("CEN", "Centro"), ("NOR", "Norte")]
DEMO_ENVIRONMENTS = ("demo", "test")

# sku, name, stock in CEN, price in cents (None: no authoritative price, RN-03)
PRODUCTS = [
    ("COR-118", "Cortadora de cerámica 118", 1, 1_250_000),
    ("COR-200", "Cortadora de cerámica 200", 500, 320_000),
    ("TOR-010", "Tornillo autoperforante 10 mm (caja)", 10_000, 15_000),
    ("CAB-045", "Cable unipolar 4,5 mm (rollo)", 40, 890_000),
    ("PRC-000", "Producto sin precio autorizado", 100, None),
]

# name, tier, credit limit in cents, exposure at the start of the morning in cents
CLIENTS = [
    ("Ferretería Platino SA", "PLATINO", 100_000_000, 99_000_000),
    ("Corralón del Sur", "REGULAR", 500_000_000, 0),
    ("Obras Rápidas SRL", "REGULAR", 5_000_000, 0),
]

# username, full name, role
USERS = [
    ("vendedor1", "Vendedor A", "ventas"),
    ("vendedor2", "Vendedor B", "ventas"),
    ("laura", "Laura (crédito)", "credito"),
    ("sergio", "Sergio (depósito)", "deposito"),
    ("marta", "Marta (dueña)", "dueno"),
]


@lru_cache(maxsize=4)
def _password_hash(password: str) -> str:
    # scrypt is slow on purpose; the tests reload the demo data often, so hash each password once.
    return generate_password_hash(password)


def is_empty(conn: Conn) -> bool:
    """True when no user exists yet (a fresh database)."""
    return one_row(conn.execute("SELECT NOT EXISTS (SELECT 1 FROM app_user) AS empty"))["empty"]


def load(conn: Conn, password: str) -> None:
    """Insert the demo data in the caller's transaction (the database must hold none of it)."""
    for code, name in WAREHOUSES:
        conn.execute("INSERT INTO warehouse (id, name) VALUES (%s, %s)", [code, name])
    for sku, name, stock_cen, price in PRODUCTS:
        product_id = one_row(conn.execute("INSERT INTO product (sku, name) VALUES (%s, %s) RETURNING id", [sku, name]))["id"]
        stock.open_level(conn, product_id=product_id, warehouse_id="CEN", on_hand=stock_cen)
        stock.open_level(conn, product_id=product_id, warehouse_id="NOR", on_hand=0)
        if price is not None:
            conn.execute("INSERT INTO price_list (product_id, price_cents) VALUES (%s, %s)", [product_id, price])
    for name, tier, limit, exposure in CLIENTS:
        conn.execute(
            "INSERT INTO client (name, tier, credit_limit_cents, exposure_cents) VALUES (%s, %s, %s, %s)",
            [name, tier, limit, exposure],
        )
    for username, full_name, role in USERS:
        user_id = create_user(conn, username, full_name, _password_hash(password), [role])
        # Example addresses (RFC 2606: example.com never receives mail), so the email notifications have
        # someone to write to when SMTP_URL points at a test server.
        conn.execute("UPDATE app_user SET email = %s WHERE id = %s", [f"{username}@example.com", user_id])


def init_app(app: Flask) -> None:
    """Register `flask demo load`."""

    @app.cli.group("demo")
    def demo_group() -> None:
        """Demo data commands."""

    @demo_group.command("load")
    @click.option("--if-empty", is_flag=True, help="Do nothing when the database already has users.")
    def demo_load(if_empty: bool) -> None:
        """Load the Nexo morning (CONTRACT.md) into the database: only with NEXO_ENV=demo or test."""
        environment = app.config["NEXO_SETTINGS"].environment
        if environment not in DEMO_ENVIRONMENTS:
            # Its users share one published password (ADR-018): they must never exist in production.
            raise click.ClickException(
                f"demo data refused: NEXO_ENV={environment}; the demo (users with a shared, published password) "
                "is loaded only with NEXO_ENV=demo or test"
            )
        with get_db().transaction() as tx:
            if not is_empty(tx.conn):
                if if_empty:
                    click.echo("demo data: the database already has data, left as is")
                    return
                raise click.ClickException("the database already has data; demo load needs an empty one")
            load(tx.conn, app.config["NEXO_SETTINGS"].demo_password)
            tx.commit()
        click.echo("demo data: loaded the Nexo morning")
