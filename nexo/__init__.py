"""Nexo: the order system a distributor can trust on its worst morning."""

from __future__ import annotations

import time
from pathlib import Path

from flask import Flask, g, request
from flask_login import current_user

from nexo import auth, demo, form_input, migrations, observability, security
from nexo.api import problems
from nexo.api import setup as api_setup
from nexo.db import Database
from nexo.extensions import csrf, get_db, login_manager, make_redis
from nexo.formatting import format_ars, format_duration, format_local
from nexo.orders.client_options import ClientOptions
from nexo.outbox.wakeup import Wakeup
from nexo.settings import Settings
from nexo.telemetry import metrics

ROOT = Path(__file__).resolve().parent.parent
# Endpoints an anonymous visitor may reach; everything else sends them to the login page.
PUBLIC_ENDPOINTS = {"auth.login", "health.health", "static", "ops.metrics"}


def create_app(settings: Settings | None = None, test_config: dict | None = None) -> Flask:
    """Build the Flask application from settings (by default read from the environment), plus test overrides."""
    settings = settings or Settings.from_env()
    app = Flask(__name__, template_folder=str(ROOT / "templates"), static_folder=str(ROOT / "static"))
    app.config.update(
        SECRET_KEY=settings.secret_key,
        NEXO_SETTINGS=settings,
        NOW=time.time,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        REMEMBER_COOKIE_HTTPONLY=True,
        WTF_CSRF_TIME_LIMIT=8 * 3600,  # a salesperson keeps a form open all morning
        MAX_CONTENT_LENGTH=256 * 1024,
    )
    if test_config:
        app.config.update(test_config)
    observability.configure_logging()
    # First of all request hooks, so that even a CSRF refusal is logged with its request id (issue 7).
    observability.init_app(app)

    # The last line of the form input guard (nexo/form_input.py): no control character a route let
    # through reaches the database.
    app.extensions["nexo.db"] = Database(
        settings.database_url,
        max_size=settings.db_pool_max,
        timeout_s=settings.db_pool_timeout_s,
        configure=form_input.refuse_control_characters,
    )
    app.extensions["nexo.redis"] = make_redis(settings.redis_url)
    app.extensions["nexo.wakeup"] = Wakeup(app.extensions["nexo.redis"], settings)
    app.extensions["nexo.client_options"] = ClientOptions()

    csrf.init_app(app)
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.login_message = "Ingresá para continuar."
    login_manager.login_message_category = "info"
    login_manager.session_protection = "basic"

    @login_manager.user_loader
    def load_user(user_id: str):
        if g.get("database_unavailable"):
            # The 503 page of a database outage is drawn as for an anonymous visitor: asking the
            # database for the user again would fail again (and turn the 503 into a 500).
            return None
        with get_db().reading_one() as conn:
            return auth.service.load_user(conn, int(user_id))

    @app.before_request
    def require_login():
        if problems.is_api_request():
            return None  # the API authenticates bearer keys itself, never the session (nexo/api/views.py)
        if request.endpoint not in PUBLIC_ENDPOINTS and not current_user.is_authenticated:
            return login_manager.unauthorized()
        return None

    # Template helpers, registered once for every template, one name each (nexo/formatting.py).
    app.add_template_filter(format_ars, "money")
    app.add_template_filter(format_local, "local_time")
    app.add_template_filter(format_duration, "duration")

    @app.context_processor
    def navigation():
        from nexo.navigation import nav_links

        return {"nav_links": nav_links}

    _register_blueprints(app)
    # After the blueprints: security wraps the views marked for the login rate limits (issue 7).
    security.init_app(app, settings.security, settings.redis_url)
    api_setup.init_app(app, settings.security)
    metrics.init_app(settings.database_url)
    _register_cli(app)
    return app


def _register_blueprints(app: Flask) -> None:
    from nexo import errors, health, home
    from nexo.api import admin as api_key_pages
    from nexo.api import cli as apikeys_cli
    from nexo.api import views as api_views
    from nexo.auth import cli as users_cli
    from nexo.auth import views as auth_views
    from nexo.credit import views as credit_views
    from nexo.deadletters import views as deadletter_views
    from nexo.ops import views as ops_views
    from nexo.orders import views as order_views
    from nexo.warehouse import views as warehouse_views

    for module in (
        errors,
        health,
        home,
        auth_views,
        users_cli,
        order_views,
        credit_views,
        warehouse_views,
        deadletter_views,
        ops_views,
        api_views,
        api_key_pages,
        apikeys_cli,
    ):
        app.register_blueprint(module.bp)


def _register_cli(app: Flask) -> None:
    import click

    @app.cli.group("db")
    def db_group():
        """Database schema commands."""

    @db_group.command("upgrade")
    def db_upgrade():
        """Apply pending migrations (safe to run twice, or from two processes at once)."""
        applied = migrations.upgrade(app.config["NEXO_SETTINGS"].database_url)
        click.echo(f"applied {len(applied)} migration(s)" + (f": {', '.join(applied)}" if applied else ""))

    @app.cli.group("demo")
    def demo_group():
        """Demo data commands."""

    @demo_group.command("load")
    @click.option("--if-empty", is_flag=True, help="Do nothing when the database already has users.")
    def demo_load(if_empty: bool):
        """Load the Nexo morning (CONTRACT.md) into the database."""
        with get_db().transaction() as tx:
            if not demo.is_empty(tx.conn):
                if if_empty:
                    click.echo("demo data: the database already has data, left as is")
                    return
                raise click.ClickException("the database already has data; demo load needs an empty one")
            demo.load(tx.conn, app.config["NEXO_SETTINGS"].demo_password)
            tx.commit()
        click.echo("demo data: loaded the Nexo morning")
