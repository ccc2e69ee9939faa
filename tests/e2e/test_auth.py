"""Login, logout, CSRF, open redirects and permissions through the real app and database."""

import pytest
from flask import Blueprint

from nexo import create_app
from nexo.auth.permissions import permission_required
from tests.helpers import csrf_token


def test_anonymous_visitor_is_sent_to_login_with_next(client):
    response = client.get("/orders/new")
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/login?next=")


def test_login_with_right_password_redirects_home(auth):
    response = auth.login("laura")
    assert response.status_code == 302
    assert response.headers["Location"] == "/"


def test_login_with_wrong_password_is_refused_without_saying_which_field(auth):
    response = auth.login("laura", "wrong-password")
    assert response.status_code == 401
    assert "Usuario o contraseña incorrectos" in response.get_data(as_text=True)


def test_unknown_user_gets_the_same_answer_as_a_wrong_password(auth):
    response = auth.login("nadie", "whatever")
    assert response.status_code == 401
    assert "Usuario o contraseña incorrectos" in response.get_data(as_text=True)


def test_login_follows_a_same_site_next(auth):
    assert auth.login("laura", next="/credit/queue").headers["Location"] == "/credit/queue"


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "/\\evil.example"])
def test_login_refuses_an_open_redirect(auth, target):
    response = auth.login("laura", next=target)
    assert response.headers["Location"] == "/"


def test_login_without_csrf_token_is_refused(client):
    response = client.post("/login", data={"username": "laura", "password": "nexo-demo"})
    assert response.status_code == 400
    assert "venció" in response.get_data(as_text=True)


def test_login_starts_a_new_session(client, auth):
    with client.session_transaction() as session:
        session["planted"] = "by-an-attacker"
    auth.login("laura")
    with client.session_transaction() as session:
        assert "planted" not in session
        assert session["_user_id"]


def test_logout_is_a_post_and_ends_the_session(client, auth):
    auth.login("laura")
    assert client.get("/logout").status_code == 405
    response = auth.logout()
    assert response.status_code == 302 and response.headers["Location"] == "/login"
    assert client.get("/").status_code == 302


def test_logout_without_csrf_is_refused(client, auth):
    auth.login("laura")
    assert client.post("/logout").status_code == 400


def test_missing_permission_is_403_and_anonymous_is_sent_to_login():
    app = create_app(test_config={"TESTING": True})
    probe = Blueprint("probe", __name__)

    @probe.route("/_probe/ops-only")
    @permission_required("ops.view")
    def ops_only():
        return "ok"

    app.register_blueprint(probe)
    client = app.test_client()
    assert client.get("/_probe/ops-only").status_code == 302
    token = csrf_token(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"username": "vendedor1", "password": "nexo-demo", "csrf_token": token})
    assert client.get("/_probe/ops-only").status_code == 403
    client.post("/logout", data={"csrf_token": csrf_token(client.get("/", follow_redirects=True).get_data(as_text=True))})
    token = csrf_token(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"username": "marta", "password": "nexo-demo", "csrf_token": token})
    assert client.get("/_probe/ops-only").get_data(as_text=True) == "ok"
    app.extensions["nexo.db"].close()


def test_error_pages_leak_nothing(client, auth):
    auth.login("laura")
    response = client.get("/no/such/page")
    body = response.get_data(as_text=True)
    assert response.status_code == 404
    assert "No encontrado" in body and "Traceback" not in body
