"""Users the owner manages and passwords people change (CONTRACT.md, Accounts and sessions; ADR-018)."""

from __future__ import annotations

import pytest

from tests.e2e.account_support import is_logged_in, login, one_time_password, post_form
from tests.helpers import DEMO_PASSWORD


def change(client, current: str, new: str, confirm: str | None = None):
    return post_form(
        client,
        "/account/password",
        "/account/password",
        {"current_password": current, "new_password": new, "new_password_confirm": new if confirm is None else confirm},
    )


def test_the_owner_creates_a_user_whose_one_time_password_is_shown_once_and_must_be_changed(app):
    marta = app.test_client()
    login(marta, "marta")
    created = post_form(
        marta, "/admin/users", "/admin/users", {"username": "Nueva", "name": "Nueva Vendedora", "roles": ["ventas"]}
    )
    assert created.status_code == 303
    page = marta.get(created.headers["Location"]).get_data(as_text=True)
    password = one_time_password(page)
    assert password and 'data-username="nueva"' in page and 'data-active="true"' in page
    assert one_time_password(marta.get("/admin/users").get_data(as_text=True)) is None  # shown once

    nueva = app.test_client()
    assert login(nueva, "nueva", password).status_code == 302
    for page_url in ("/orders/new", "/", "/account"):  # no page but the password change
        response = nueva.get(page_url)
        assert response.status_code == 302 and response.headers["Location"].endswith("/account/password")
    assert change(nueva, password, "caballo bateria correcta").status_code == 303
    assert nueva.get("/orders/new").status_code == 200
    assert login(app.test_client(), "nueva", password).status_code == 401  # the one-time password is gone


@pytest.mark.parametrize(
    ("new", "confirm", "field"),
    [
        ("corta", None, "new_password"),  # under 12 characters
        ("qwerty123456", None, "new_password"),  # in the common list
        ("Password1234", None, "new_password"),  # in the common list, whatever its case
        ("una frase bastante larga", "otra frase bastante larga", "new_password_confirm"),
    ],
)
def test_weak_common_or_mismatched_new_passwords_are_refused(client, new, confirm, field):
    login(client, "laura")
    response = change(client, DEMO_PASSWORD, new, confirm)
    assert response.status_code == 400
    assert f'data-field-error="{field}"' in response.get_data(as_text=True)
    assert login(client.application.test_client(), "laura").status_code == 302  # unchanged


def test_a_wrong_current_password_is_refused(client):
    login(client, "laura")
    response = change(client, "not-the-password", "una frase bastante larga")
    assert response.status_code == 400 and 'data-field-error="current_password"' in response.get_data(as_text=True)


def test_changing_my_password_ends_my_other_sessions(app):
    phone, office = app.test_client(), app.test_client()
    login(phone, "laura")
    login(office, "laura")
    assert change(office, DEMO_PASSWORD, "una frase bastante larga").status_code == 303
    assert is_logged_in(office) and not is_logged_in(phone)
    assert login(app.test_client(), "laura").status_code == 401
    assert login(app.test_client(), "laura", "una frase bastante larga").status_code == 302


def test_a_reset_stops_the_old_password_and_shows_a_new_one_time_password(app):
    marta = app.test_client()
    login(marta, "marta")
    reset = post_form(marta, "/admin/users", "/admin/users/laura/reset-password")
    assert reset.status_code == 303
    password = one_time_password(marta.get(reset.headers["Location"]).get_data(as_text=True))
    assert password
    assert login(app.test_client(), "laura").status_code == 401
    laura = app.test_client()
    assert login(laura, "laura", password).status_code == 302
    assert laura.get("/credit/queue").headers["Location"].endswith("/account/password")


def test_the_users_page_lists_roles_and_state_and_is_the_owners_only(app):
    marta, laura = app.test_client(), app.test_client()
    login(marta, "marta")
    post_form(marta, "/admin/users", "/admin/users/sergio/deactivate")
    post_form(marta, "/admin/users", "/admin/users/vendedor2/roles", {"roles": ["ventas", "credito"]})
    page = marta.get("/admin/users").get_data(as_text=True)
    assert 'data-username="sergio" data-active="false"' in page
    assert 'data-username="vendedor2" data-active="true" data-roles="credito ventas"' in page
    login(laura, "laura")
    assert laura.get("/admin/users").status_code == 403
    assert post_form(laura, "/account", "/admin/users/vendedor1/deactivate").status_code == 403


def test_the_owner_cannot_lock_herself_out(app):
    marta = app.test_client()
    login(marta, "marta")
    post_form(marta, "/admin/users", "/admin/users/marta/deactivate")
    post_form(marta, "/admin/users", "/admin/users/marta/roles", {"roles": ["ventas"]})
    assert 'data-username="marta" data-active="true" data-roles="dueno"' in marta.get("/admin/users").get_data(as_text=True)


def test_users_create_on_the_command_line_refuses_a_common_password(app):
    result = app.test_cli_runner().invoke(
        args=["users", "create", "otra", "--name", "Otra", "--role", "ventas", "--password", "qwerty123456"]
    )
    assert result.exit_code != 0 and "weak password" in result.output
