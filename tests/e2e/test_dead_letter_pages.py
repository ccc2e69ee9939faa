"""Dead-letter admin pages through the real app and database: list, detail, actions, groups, permissions."""

from __future__ import annotations

import re
import threading

import pytest

from nexo import create_app
from nexo.deadletters import service
from tests.conftest import AuthActions
from tests.dead_letter_factory import age, audit_rows, make_dead_letter, row
from tests.helpers import csrf_token, http_login

XSS = "<script>alert(1)</script>"


def ids_on(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-dead-letter-id="(\d+)"', html)]


@pytest.fixture
def marta(client, auth):
    auth.login("marta")
    return client


def token(client, dead_letter_id=None) -> str:
    page = f"/admin/dead-letters/{dead_letter_id}" if dead_letter_id else "/admin/dead-letters"
    return csrf_token(client.get(page).get_data(as_text=True))


def post(client, url, data=None, dead_letter_id=None):
    return client.post(url, data={"csrf_token": token(client, dead_letter_id), **(data or {})})


def test_list_shows_each_dead_letter_newest_first_with_total_count_and_no_payload(db, marta):
    made = [make_dead_letter(db, payload={"marker": f"PAYLOAD-SECRET-{i}"}) for i in range(3)]
    response = marta.get("/admin/dead-letters")
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and response.headers["X-Total-Count"] == "3"
    assert "X-Truncated" not in response.headers
    assert ids_on(html) == [m["id"] for m in reversed(made)]
    assert "PAYLOAD-SECRET" not in html
    assert (
        'data-error-signature="fiscal:422"' in html
        and "rechazó el aviso (422): «CUIT inválido»" in html
        and "Corralón del Sur" in html
    )


def test_list_filters_by_destination_status_signature_client_and_date(db, marta):
    fiscal = make_dead_letter(db, http_status=422)["id"]
    warehouse = make_dead_letter(
        db, destination="warehouse", http_status=None, error_class="ReadTimeout", client="Obras Rápidas SRL"
    )["id"]
    discarded = make_dead_letter(db, http_status=503)["id"]
    service.discard(db, discarded, "marta", "duplicado")
    old = make_dead_letter(db, http_status=422)["id"]
    age(db, old, days=10)
    client_id = row(db, "SELECT id FROM client WHERE name = 'Obras Rápidas SRL'")["id"]

    def listed(query):
        response = marta.get("/admin/dead-letters?" + query)
        assert response.status_code == 200, query
        return sorted(ids_on(response.get_data(as_text=True))), int(response.headers["X-Total-Count"])

    assert listed("destination=warehouse") == ([warehouse], 1)
    assert listed("destination=fiscal&status=pending") == (sorted([fiscal, old]), 2)
    assert listed("status=discarded") == ([discarded], 1)
    assert listed("signature=fiscal:422") == (sorted([fiscal, old]), 2)
    assert listed(f"client={client_id}") == ([warehouse], 1)
    from datetime import date, timedelta

    today = date.today().isoformat()
    assert listed(f"from_date={today}&destination=fiscal&signature=fiscal:422") == ([fiscal], 1)
    assert listed(f"to_date={(date.today() - timedelta(days=5)).isoformat()}") == ([old], 1)


def test_list_paginates_with_page_and_size(db, marta):
    made = [make_dead_letter(db)["id"] for _ in range(5)]
    newest_first = list(reversed(made))
    pages = [marta.get(f"/admin/dead-letters?size=2&page={n}") for n in (1, 2, 3)]
    assert [ids_on(p.get_data(as_text=True)) for p in pages] == [newest_first[:2], newest_first[2:4], newest_first[4:]]
    assert {p.headers["X-Total-Count"] for p in pages} == {"5"}


def test_list_says_when_the_candidate_cap_truncates(db, marta, monkeypatch):
    for _ in range(3):
        make_dead_letter(db)
    monkeypatch.setattr(service, "CANDIDATE_CAP", 2)
    response = marta.get("/admin/dead-letters")
    assert response.headers["X-Truncated"] == "true" and response.headers["X-Total-Count"] == "2"
    assert 'data-truncated="true"' in response.get_data(as_text=True)


@pytest.mark.parametrize(
    "query", ["destination=nowhere", "status=lost", "page=0", "size=1000", "page=x", "client=not-a-uuid", "from_date=yesterday"]
)
def test_list_refuses_malformed_filters(marta, query):
    assert marta.get("/admin/dead-letters?" + query).status_code == 400


def test_detail_shows_payload_attempts_and_order_and_audits_each_view(db, marta):
    made = make_dead_letter(
        db,
        attempts=3,
        http_status=503,
        error="503 Service Unavailable",
        payload={"marker": "PAYLOAD-VISIBLE"},
        total_cents=1_250_000,
    )
    response = marta.get(f"/admin/dead-letters/{made['id']}")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "PAYLOAD-VISIBLE" in html and str(made["event_id"]) in html
    assert len(re.findall(r"<tr data-attempt-no=", html)) == 3
    assert "503 Service Unavailable" in html
    assert "Corralón del Sur" in html and "Vendedor A" in html and "$ 12.500,00" in html and "CONFIRMADO" in html
    marta.get(f"/admin/dead-letters/{made['id']}")
    views = audit_rows(db, "dead_letter.viewed", made["id"])
    assert [v["actor"] for v in views] == ["marta", "marta"]


def test_unknown_dead_letter_is_a_plain_404_and_not_audited(db, marta):
    assert marta.get("/admin/dead-letters/424242").status_code == 404
    assert audit_rows(db, "dead_letter.viewed") == []


SALESPERSON_ROUTES = [
    ("GET", "/admin/dead-letters"),
    ("GET", "/admin/dead-letters/{id}"),
    ("GET", "/admin/dead-letters/groups"),
    ("GET", "/admin/dead-letters/bulk?destination=fiscal"),
    ("POST", "/admin/dead-letters/{id}/replay"),
    ("POST", "/admin/dead-letters/{id}/discard"),
    ("POST", "/admin/dead-letters/{id}/check-key"),
    ("POST", "/admin/dead-letters/bulk"),
]


def test_a_salesperson_gets_403_on_every_dead_letter_route(db, client, auth):
    made = make_dead_letter(db)
    auth.login("vendedor1")
    tok = csrf_token(client.get("/", follow_redirects=True).get_data(as_text=True))
    for method, template in SALESPERSON_ROUTES:
        url = template.format(id=made["id"])
        response = client.get(url) if method == "GET" else client.post(url, data={"csrf_token": tok, "reason": "x"})
        assert response.status_code == 403, (method, url)
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "pending"


def test_anonymous_visitor_is_sent_to_login(client):
    response = client.get("/admin/dead-letters")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login?next=")


def test_actions_without_csrf_token_are_refused(db, marta):
    made = make_dead_letter(db)
    for action in ("replay", "discard", "check-key"):
        assert marta.post(f"/admin/dead-letters/{made['id']}/{action}", data={"reason": "x"}).status_code == 400
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "pending"


def test_replay_redirects_303_and_a_second_replay_is_409_naming_who(db, marta):
    made = make_dead_letter(db)
    first = post(marta, f"/admin/dead-letters/{made['id']}/replay", dead_letter_id=made["id"])
    assert first.status_code == 303 and first.headers["Location"] == f"/admin/dead-letters/{made['id']}"
    assert row(db, "SELECT status FROM outbox_event WHERE id = %s", [made["event_id"]])["status"] == "PENDIENTE"
    second = post(marta, f"/admin/dead-letters/{made['id']}/replay", dead_letter_id=made["id"])
    assert second.status_code == 409 and "marta" in second.get_data(as_text=True)
    discard = post(marta, f"/admin/dead-letters/{made['id']}/discard", {"reason": "tarde"}, dead_letter_id=made["id"])
    assert discard.status_code == 409
    assert post(marta, "/admin/dead-letters/424242/replay").status_code == 404


@pytest.mark.parametrize("reason", ["", "   "])
def test_discard_without_reason_is_400_with_a_field_error(db, marta, reason):
    made = make_dead_letter(db)
    response = post(marta, f"/admin/dead-letters/{made['id']}/discard", {"reason": reason}, dead_letter_id=made["id"])
    assert response.status_code == 400
    assert 'data-field-error="reason"' in response.get_data(as_text=True)
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "pending"
    assert audit_rows(db, "dead_letter.discarded") == []


def test_a_discard_reason_is_rendered_escaped_wherever_it_appears(db, app, marta):
    made = make_dead_letter(db, error=XSS)
    response = post(marta, f"/admin/dead-letters/{made['id']}/discard", {"reason": XSS}, dead_letter_id=made["id"])
    assert response.status_code == 303
    assert row(db, "SELECT resolution_note FROM dead_letter WHERE id = %s", [made["id"]])["resolution_note"] == XSS
    for page in (f"/admin/dead-letters/{made['id']}", "/admin/dead-letters", "/admin/dead-letters?status=discarded"):
        html = marta.get(page).get_data(as_text=True)
        assert XSS not in html, page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, page
    # The order page (CU-01) shows who discarded its event and why: escaped there too.
    seller = app.test_client()
    AuthActions(seller).login("vendedor1")
    order_page = seller.get(f"/orders/{made['order_id']}")
    assert order_page.status_code == 200
    html = order_page.get_data(as_text=True)
    assert XSS not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_discard_shows_who_and_why_and_keeps_the_event_fallido(db, marta):
    made = make_dead_letter(db)
    post(marta, f"/admin/dead-letters/{made['id']}/discard", {"reason": "factura hecha a mano"}, dead_letter_id=made["id"])
    html = marta.get(f"/admin/dead-letters/{made['id']}").get_data(as_text=True)
    assert 'data-resolved-by="marta"' in html and "factura hecha a mano" in html
    assert row(db, "SELECT status FROM outbox_event WHERE id = %s", [made["event_id"]])["status"] == "FALLIDO"


@pytest.fixture
def clocked_app():
    clock = {"now": 1_000_000.0}
    application = create_app(test_config={"TESTING": True, "NOW": lambda: clock["now"]})
    yield application, clock
    application.extensions["nexo.db"].close()


def test_actions_need_a_fresh_login(db, clocked_app):
    application, clock = clocked_app
    made = make_dead_letter(db)
    web = application.test_client()
    tok = csrf_token(web.get("/login").get_data(as_text=True))
    web.post("/login", data={"username": "marta", "password": "nexo-demo", "csrf_token": tok})
    clock["now"] += 901  # DLQ_FRESH_LOGIN_S defaults to 900 s
    stale = post(web, f"/admin/dead-letters/{made['id']}/replay", dead_letter_id=made["id"])
    assert stale.status_code == 303
    assert stale.headers["Location"] == f"/login?next=/admin/dead-letters/{made['id']}"
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "pending"
    login_page = web.get(stale.headers["Location"]).get_data(as_text=True)
    assert "volvé a ingresar" in login_page
    web.post(stale.headers["Location"], data={"username": "marta", "password": "nexo-demo", "csrf_token": csrf_token(login_page)})
    clock["now"] += 899
    fresh = post(web, f"/admin/dead-letters/{made['id']}/replay", dead_letter_id=made["id"])
    assert fresh.status_code == 303 and fresh.headers["Location"] == f"/admin/dead-letters/{made['id']}"
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "resolved"


def test_key_check_answer_is_shown_on_the_detail_page(db, app, marta, fakes, monkeypatch):
    import dataclasses

    made = make_dead_letter(db)
    monkeypatch.setitem(
        app.config, "NEXO_SETTINGS", dataclasses.replace(app.config["NEXO_SETTINGS"], fiscal_url=fakes.fiscal_url)
    )
    response = post(marta, f"/admin/dead-letters/{made['id']}/check-key", dead_letter_id=made["id"])
    assert response.status_code == 303
    html = marta.get(f"/admin/dead-letters/{made['id']}").get_data(as_text=True)
    assert 'data-key-check="not_applied"' in html and "consultó marta" in html
    assert [r["details"]["answer"] for r in audit_rows(db, "dead_letter.key_checked", made["id"])] == ["not_applied"]


def test_groups_preview_says_how_many_and_confirm_touches_only_those(db, marta):
    ids = [make_dead_letter(db, http_status=422)["id"] for _ in range(3)]
    make_dead_letter(db, http_status=503)
    make_dead_letter(db, destination="warehouse", http_status=422)
    groups = marta.get("/admin/dead-letters/groups").get_data(as_text=True)
    assert re.search(r'data-group-signature="fiscal:422" data-group-destination="fiscal" data-group-count="3"', groups)
    preview = marta.get("/admin/dead-letters/bulk?action=discard&destination=fiscal&signature=fiscal:422")
    html = preview.get_data(as_text=True)
    assert 'data-bulk-count="3"' in html
    late = make_dead_letter(db, http_status=422)["id"]  # arrives after the preview
    form = {
        "csrf_token": csrf_token(html),
        "action": "discard",
        "destination": "fiscal",
        "signature": "fiscal:422",
        "ids": re.search(r'name="ids" type="hidden" value="([^"]*)"', html).group(1),
        "expected_count": "3",
    }
    refused = marta.post("/admin/dead-letters/bulk", data=form)
    assert refused.status_code == 400 and 'data-field-error="reason"' in refused.get_data(as_text=True)
    done = marta.post("/admin/dead-letters/bulk", data={**form, "reason": "proveedor anuló las facturas"})
    assert done.status_code == 303
    assert sorted(int(r["object_id"]) for r in audit_rows(db, "dead_letter.discarded")) == sorted(ids)
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [late])["status"] == "pending"


def test_bulk_confirm_with_a_count_that_does_not_match_the_ids_is_refused(db, marta):
    ids = [make_dead_letter(db)["id"] for _ in range(2)]
    response = post(
        marta,
        "/admin/dead-letters/bulk",
        {"action": "replay", "destination": "fiscal", "ids": ",".join(map(str, ids)), "expected_count": "5"},
    )
    assert response.status_code == 400
    assert audit_rows(db, "dead_letter.replayed") == []


def test_a_group_action_needs_one_destination(marta):
    assert marta.get("/admin/dead-letters/bulk?action=replay&signature=fiscal:422").status_code == 400


def test_two_admins_acting_at_once_one_wins_and_the_other_gets_409(db, live_server):
    made = make_dead_letter(db)
    url = f"{live_server}/admin/dead-letters/{made['id']}"
    sessions = [http_login(live_server, "marta") for _ in range(2)]
    tokens = [csrf_token(s.get(url, timeout=10).text) for s in sessions]
    barrier, statuses = threading.Barrier(2), []

    def act(session, tok, action):
        barrier.wait()
        response = session.post(
            f"{url}/{action}", data={"csrf_token": tok, "reason": "otra decisión"}, allow_redirects=False, timeout=10
        )
        statuses.append(response.status_code)

    threads = [
        threading.Thread(target=act, args=(s, t, a)) for s, t, a in zip(sessions, tokens, ("replay", "discard"), strict=True)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [303, 409]
    decided = audit_rows(db, "dead_letter.replayed", made["id"]) + audit_rows(db, "dead_letter.discarded", made["id"])
    assert len(decided) == 1
