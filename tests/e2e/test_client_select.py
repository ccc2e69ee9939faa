"""The order form's client select: built once per web process, and never stale (migration 0090).

The app under test lives for the whole session, so its kept list also outlives every test's database
reset: a list kept from an earlier test that survived here would show up as a wrong client.
"""

from __future__ import annotations

import re

from tests.e2e.order_forms import client_option, form_data

OPTION = re.compile(r'<option value="([0-9a-f-]{36})"( selected)?>([^<]*)</option>')


def _client_names(html: str) -> list[str]:
    return [text.split(" · ")[0] for _, _, text in OPTION.findall(html)]


def _form(client) -> str:
    response = client.get("/orders/new")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def _sql(db, statement: str, params=()) -> None:
    with db.transaction() as tx:
        tx.execute(statement, params)
        tx.commit()


def _version(db):
    with db.reading() as conn:
        return conn.execute("SELECT version FROM list_version WHERE list = 'client'").fetchone()["version"]


def test_every_change_to_the_client_list_shows_on_the_next_form(client, auth, db):
    auth.login("vendedor1")
    before = _client_names(_form(client))
    assert "Corralón del Sur" in before and before == sorted(before)

    _sql(db, "INSERT INTO client (name, tier, credit_limit_cents) VALUES ('Aberturas Nuevas', 'REGULAR', 100)")
    assert "Aberturas Nuevas" in _client_names(_form(client))

    _sql(db, "UPDATE client SET name = 'Aberturas Renovadas' WHERE name = 'Aberturas Nuevas'")
    names = _client_names(_form(client))
    assert "Aberturas Renovadas" in names and "Aberturas Nuevas" not in names

    _sql(db, "UPDATE client SET tier = 'PLATINO' WHERE name = 'Aberturas Renovadas'")
    assert "Aberturas Renovadas · Platino" in _form(client)

    _sql(db, "DELETE FROM client WHERE name = 'Aberturas Renovadas'")
    assert _client_names(_form(client)) == before


def test_the_kept_list_is_what_the_form_shows_until_the_version_moves(client, auth, db):
    auth.login("vendedor1")
    _form(client)
    # A rename that does not move the version (its trigger off) stays invisible: the form is served
    # from the kept list, not from a read of every client.
    _sql(db, "ALTER TABLE client DISABLE TRIGGER client_list_changed")
    try:
        _sql(db, "UPDATE client SET name = 'Nombre Fantasma' WHERE name = 'Corralón del Sur'")
    finally:
        _sql(db, "ALTER TABLE client ENABLE TRIGGER client_list_changed")
    assert "Nombre Fantasma" not in _form(client)
    _sql(db, "UPDATE client SET tier = tier WHERE name = 'Nombre Fantasma'")  # any change of the list
    assert "Nombre Fantasma" in _form(client)


def test_orders_charging_credit_leave_the_version_alone(client, auth, db):
    auth.login("vendedor1")
    html = _form(client)
    version = _version(db)
    response = client.post("/orders/new", data=form_data(html, "Corralón del Sur", [("COR-118", 1)]))
    assert response.status_code == 303
    with db.reading() as conn:
        assert conn.execute("SELECT exposure_cents FROM client WHERE name = 'Corralón del Sur'").fetchone()["exposure_cents"] > 0
    assert _version(db) == version


def test_a_form_sent_back_keeps_its_client_chosen(client, auth):
    auth.login("vendedor1")
    html = _form(client)
    chosen = client_option(html, "Corralón del Sur")
    data = form_data(html, "Corralón del Sur", [("NO-EXISTE", 1)])
    page = client.post("/orders/new", data=data).get_data(as_text=True)
    assert [value for value, selected, _ in OPTION.findall(page) if selected] == [chosen]
    # Garbage for the client marks nothing and breaks nothing; the kept list is not altered.
    page = client.post("/orders/new", data={**data, "client_id": f'{chosen}"><script>'}).get_data(as_text=True)
    assert not [value for value, selected, _ in OPTION.findall(page) if selected] and "<script>" not in page
    assert not [value for value, selected, _ in OPTION.findall(_form(client)) if selected]
