"""Control characters and non-ASCII digits in any form: 400 with the field marked, never a 500 (guarantee 17).

Each form of the app is posted with a NUL byte (and other control characters) in its fields; the last
line (nexo/form_input.GuardedStrDumper) is probed with a route that validates nothing.
"""

from __future__ import annotations

import pytest
from flask import Blueprint

from nexo import create_app
from nexo.extensions import get_db
from tests.dead_letter_factory import audit_rows, make_dead_letter, row
from tests.e2e.order_forms import form_data
from tests.helpers import csrf_token
from tests.integration.order_helpers import count

NUL = "\x00"
CONTROL = ["\x00", "\x01", "\x1b", "\x1f", "\x7f", "\x85"]


def _order_post(client, auth, lines=(("COR-200", 1),), **fields):
    auth.login("vendedor1")
    html = client.get("/orders/new").get_data(as_text=True)
    return client.post("/orders/new", data={**form_data(html, "Corralón del Sur", list(lines)), **fields})


def _nothing_ordered(db) -> bool:
    return count(db, "SELECT count(*) FROM orders") == 0 and count(db, "SELECT count(*) FROM idempotency_keys") == 0


# --- the order form -------------------------------------------------------------------------------


@pytest.mark.parametrize("char", CONTROL)
def test_a_control_character_in_an_sku_is_a_400_on_its_line(db, client, auth, char):
    response = _order_post(client, auth, lines=[("COR-200", 1), (f"TOR{char}010", 2)])
    html = response.get_data(as_text=True)
    assert response.status_code == 400, html[:500]
    assert html.count("data-line-error") == 1 and "caracteres de control" in html
    assert _nothing_ordered(db)


def test_a_control_character_at_the_end_of_an_sku_is_not_silently_dropped(db, client, auth):
    response = _order_post(client, auth, lines=[("COR-200\x1f", 1)])  # str.strip() would eat \x1f
    assert response.status_code == 400 and "caracteres de control" in response.get_data(as_text=True)


def test_spaces_tabs_and_line_breaks_around_an_sku_or_quantity_are_still_trimmed(db, client, auth):
    assert _order_post(client, auth, lines=[("\tcor-200\xa0\r\n", " 1\u3000")]).status_code == 303


@pytest.mark.parametrize("quantity", ["١٢", "１２", "12\x00", "\x0012", "1\x002", "²", "1_000", "+3", "0x1"])
def test_a_quantity_is_ascii_digits_only(db, client, auth, quantity):
    response = _order_post(client, auth, lines=[("COR-200", quantity)])
    html = response.get_data(as_text=True)
    assert response.status_code == 400, html[:500]
    assert "data-line-error" in html
    assert _nothing_ordered(db)


@pytest.mark.parametrize("field", ["request_id", "client_id", "deposit_id", "delivery_method"])
def test_a_nul_in_a_header_field_is_a_400_with_that_field_marked(db, client, auth, field):
    auth.login("vendedor1")
    html = client.get("/orders/new").get_data(as_text=True)
    data = form_data(html, "Corralón del Sur", [("COR-200", 1)], delivery_method="retira")
    data[field] = data[field][:3] + NUL + data[field][3:]
    response = client.post("/orders/new", data=data)
    page = response.get_data(as_text=True)
    assert response.status_code == 400, page[:500]
    assert f'data-field-error="{field}"' in page
    assert _nothing_ordered(db)


# --- credit ------------------------------------------------------------------------------------------


def _pending_order(client, auth) -> str:
    from tests.e2e.test_credit_queue import order_through_form

    return order_through_form(client, auth, [("CAB-045", 2)])


def _queue_token(client) -> str:
    return csrf_token(client.get("/credit/queue").get_data(as_text=True))


def test_a_nul_in_the_approval_note_is_a_400_naming_the_note(db, client, auth):
    order_id = _pending_order(client, auth)
    response = client.post(f"/credit/queue/{order_id}/approve", data={"csrf_token": _queue_token(client), "note": f"ok{NUL}"})
    assert response.status_code == 400 and 'data-field-error="note"' in response.get_data(as_text=True)
    assert row(db, "SELECT status FROM orders WHERE id = %s", [order_id])["status"] == "PENDIENTE_AUTORIZACION"


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x9f"])
def test_a_control_character_in_the_rejection_reason_is_a_400_naming_the_reason(db, client, auth, char):
    order_id = _pending_order(client, auth)
    response = client.post(
        f"/credit/queue/{order_id}/reject", data={"csrf_token": _queue_token(client), "reason": f"sin{char}crédito"}
    )
    assert response.status_code == 400 and 'data-field-error="reason"' in response.get_data(as_text=True)
    assert row(db, "SELECT status FROM orders WHERE id = %s", [order_id])["status"] == "PENDIENTE_AUTORIZACION"


def test_a_rejection_reason_keeps_its_line_breaks_and_tabs(db, client, auth):
    order_id = _pending_order(client, auth)
    response = client.post(
        f"/credit/queue/{order_id}/reject",
        data={"csrf_token": _queue_token(client), "reason": "sin crédito\r\n\tllamar al cliente"},
    )
    assert response.status_code == 303
    assert row(db, "SELECT status FROM orders WHERE id = %s", [order_id])["status"] == "RECHAZADO"


# --- dead letters ------------------------------------------------------------------------------------


def _marta(client, auth):
    auth.login("marta")
    return client


def test_a_nul_in_a_discard_reason_or_replay_note_is_a_400_naming_it(db, client, auth):
    web = _marta(client, auth)
    made = make_dead_letter(db)
    url = f"/admin/dead-letters/{made['id']}"
    for action, field in (("discard", "reason"), ("replay", "note")):
        token = csrf_token(web.get(url).get_data(as_text=True))
        response = web.post(f"{url}/{action}", data={"csrf_token": token, field: f"duplicado{NUL}"})
        assert response.status_code == 400 and f'data-field-error="{field}"' in response.get_data(as_text=True)
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "pending"
    assert audit_rows(db, "dead_letter.discarded") == [] and audit_rows(db, "dead_letter.replayed") == []


@pytest.mark.parametrize("field", ["reason", "signature", "ids"])
def test_a_nul_in_a_group_action_is_a_400_naming_the_field(db, client, auth, field):
    web = _marta(client, auth)
    ids = [make_dead_letter(db)["id"] for _ in range(2)]
    token = csrf_token(web.get("/admin/dead-letters").get_data(as_text=True))
    data = {
        "csrf_token": token,
        "action": "discard",
        "destination": "fiscal",
        "signature": "fiscal:422",
        "ids": ",".join(map(str, ids)),
        "expected_count": "2",
        "reason": "anuladas",
    }
    data[field] = data[field] + NUL
    response = web.post("/admin/dead-letters/bulk", data=data)
    assert response.status_code == 400 and f'data-field-error="{field}"' in response.get_data(as_text=True)
    assert audit_rows(db, "dead_letter.discarded") == []


@pytest.mark.parametrize("page", ["/admin/dead-letters", "/admin/dead-letters/groups", "/admin/dead-letters/bulk"])
def test_a_nul_in_the_list_filters_is_a_400(db, client, auth, page):
    response = _marta(client, auth).get(page + "?destination=fiscal&signature=fiscal%00:422")
    assert response.status_code == 400


# --- login ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["username", "password"])
def test_a_nul_in_the_login_form_is_a_400_naming_the_field(client, field):
    token = csrf_token(client.get("/login").get_data(as_text=True))
    data = {"csrf_token": token, "username": "laura", "password": "nexo-demo"}
    data[field] = data[field] + NUL
    response = client.post("/login", data=data)
    assert response.status_code == 400 and "caracteres de control" in response.get_data(as_text=True)


# --- the last line ----------------------------------------------------------------------------------------


@pytest.fixture
def app_with_an_unvalidated_route():
    """The app plus a route that hands a form value to the database without validating it."""
    application = create_app(test_config={"TESTING": True, "PROPAGATE_EXCEPTIONS": False})
    probe = Blueprint("probe_input", __name__)

    @probe.route("/_probe/echo", methods=["POST"])
    def echo():
        from flask import request

        with get_db().reading() as conn:
            return conn.execute("SELECT %s::text AS v", [request.form["text"]]).fetchone()["v"]

    application.register_blueprint(probe)
    yield application
    application.extensions["nexo.db"].close()


@pytest.mark.parametrize("char", CONTROL)
def test_no_control_character_reaches_the_database_from_an_unvalidated_route(app_with_an_unvalidated_route, char):
    client = app_with_an_unvalidated_route.test_client()
    login = csrf_token(client.get("/login").get_data(as_text=True))
    client.post("/login", data={"csrf_token": login, "username": "marta", "password": "nexo-demo"})
    token = csrf_token(client.get("/", follow_redirects=True).get_data(as_text=True))
    assert client.post("/_probe/echo", data={"csrf_token": token, "text": f"a{char}b"}).status_code == 400
    allowed = client.post("/_probe/echo", data={"csrf_token": token, "text": "línea 1\r\n\tlínea 2"})
    assert allowed.status_code == 200 and allowed.get_data(as_text=True) == "línea 1\r\n\tlínea 2"
