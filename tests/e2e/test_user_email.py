"""The owner sets where a person's email notifications go (README "Email notifications"); so does the CLI."""

from __future__ import annotations

from tests.e2e.account_support import login, post_form


def _email(db, username: str) -> str | None:
    with db.reading() as conn:
        return conn.execute("SELECT email FROM app_user WHERE username = %s", [username]).fetchone()["email"]


def test_the_owner_sets_and_removes_a_users_email_and_the_trail_says_so(app, db):
    marta = app.test_client()
    login(marta, "marta")
    assert (
        post_form(marta, "/admin/users", "/admin/users/laura/email", {"email": " laura@distribuidora.com.ar "}).status_code == 303
    )
    assert _email(db, "laura") == "laura@distribuidora.com.ar"
    page = marta.get("/admin/users").get_data(as_text=True)
    assert 'data-email="laura@distribuidora.com.ar"' in page and "Correo para avisos" in page
    assert post_form(marta, "/admin/users", "/admin/users/laura/email", {"email": ""}).status_code == 303
    assert _email(db, "laura") is None
    assert "Correo cambiado" in marta.get("/admin/auth-events?user=laura").get_data(as_text=True)


def test_a_malformed_email_is_refused_in_words_and_changes_nothing(app, db):
    marta = app.test_client()
    login(marta, "marta")
    refused = post_form(marta, "/admin/users", "/admin/users/laura/email", {"email": "laura en la oficina"})
    assert refused.status_code == 303
    assert "Escribí un correo como nombre@empresa.com.ar." in marta.get("/admin/users").get_data(as_text=True)
    assert _email(db, "laura") == "laura@example.com"  # the demo's example address, untouched


def test_only_the_owner_sets_emails(app):
    laura = app.test_client()
    login(laura, "laura")
    assert post_form(laura, "/orders", "/admin/users/laura/email", {"email": "x@example.com"}).status_code == 403


def test_the_cli_sets_an_email_at_creation_and_later(app, db):
    runner = app.test_cli_runner()
    created = runner.invoke(
        args=["users", "create", "nuevo", "--name", "Nuevo", "--role", "credito", "--email", "nuevo@example.com"],
        input="una-clave-larga\nuna-clave-larga\n",
    )
    assert created.exit_code == 0, created.output
    assert _email(db, "nuevo") == "nuevo@example.com"
    assert runner.invoke(args=["users", "set-email", "nuevo", "otro@example.com"]).exit_code == 0
    assert _email(db, "nuevo") == "otro@example.com"
    refused = runner.invoke(args=["users", "set-email", "nuevo", "sin-arroba"])
    assert refused.exit_code != 0 and "not an address" in refused.output
    assert runner.invoke(args=["users", "set-email", "nuevo"]).exit_code == 0
    assert _email(db, "nuevo") is None
