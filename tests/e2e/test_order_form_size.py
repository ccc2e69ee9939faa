"""GET /orders/new as the client list grows (CONTRACT.md): with up to 500 clients a select of every client;
with more, a lookup, so the form stays small (≤ 40 KB) however many clients the distributor has."""

from __future__ import annotations

import re

FORM_LIMIT_BYTES = 40 * 1024
OPTION = re.compile(r'<option value="[0-9a-f-]{36}"(?: selected)?>([^<]*)</option>')


def _clients_up_to(db, total: int) -> None:
    """Add clients until there are `total` of them, in one statement."""
    with db.transaction() as tx:
        have = tx.execute("SELECT count(*) AS n FROM client").fetchone()["n"]
        tx.execute(
            "INSERT INTO client (name, tier, credit_limit_cents)"
            " SELECT 'Cliente de prueba ' || lpad(g::text, 5, '0'), 'REGULAR', 100000 FROM generate_series(1, %s) AS g",
            [total - have],
        )
        tx.commit()


def test_with_500_clients_the_form_offers_every_client_in_its_select(client, auth, db):
    _clients_up_to(db, 500)
    auth.login("vendedor1")
    html = client.get("/orders/new").get_data(as_text=True)
    assert len(OPTION.findall(html)) == 500


def test_with_10000_clients_the_form_stays_under_40_kb(client, auth, db):
    _clients_up_to(db, 10_000)
    auth.login("vendedor1")
    response = client.get("/orders/new")
    assert response.status_code == 200
    assert len(response.get_data()) <= FORM_LIMIT_BYTES
    html = response.get_data(as_text=True)
    assert OPTION.findall(html) == [] and 'data-client-field="lookup"' in html


def test_past_500_clients_the_lookup_finds_one_and_the_form_takes_it_without_javascript(client, auth, db):
    _clients_up_to(db, 501)
    auth.login("vendedor1")
    found = client.get("/orders/clients", query_string={"q": "corralón"}).get_data(as_text=True)
    ids = re.findall(r'data-client-id="([0-9a-f-]{36})"', found)
    with db.reading() as conn:
        corralon = conn.execute("SELECT id FROM client WHERE name = 'Corralón del Sur'").fetchone()["id"]
    assert ids == [str(corralon)]
    link = re.search(r'href="(/orders/new\?client_id=[^"]+)"', found).group(1)
    form = client.get(link).get_data(as_text=True)
    assert f'name="client_id" value="{corralon}"' in form and f'data-chosen-client="{corralon}"' in form
    token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    request_id = re.search(r'name="request_id" value="([^"]+)"', form).group(1)
    posted = client.post(
        "/orders/new",
        data={
            "csrf_token": token,
            "request_id": request_id,
            "client_id": str(corralon),
            "deposit_id": "CEN",
            "lines-0-sku": "TOR-010",
            "lines-0-quantity": "1",
        },
    )
    assert posted.status_code == 303
    answer = client.get("/orders/clients", query_string={"q": "nadie%_se llama así"})
    assert answer.status_code == 200 and "data-no-match" in answer.get_data(as_text=True)
    assert client.get("/orders/clients", query_string={"q": "a", "page": "99999999999"}).status_code == 200


def test_the_client_lookup_reads_like_the_sku_lookup_every_word_in_any_order_accents_aside(client, auth, db):
    _clients_up_to(db, 501)
    auth.login("vendedor1")
    with db.reading() as conn:
        corralon = str(conn.execute("SELECT id FROM client WHERE name = 'Corralón del Sur'").fetchone()["id"])
    for typed in ("corralon", "SUR corralón", "sur   CORRALON del", "rralo"):
        found = client.get("/orders/clients", query_string={"q": typed}).get_data(as_text=True)
        assert corralon in re.findall(r'data-client-id="([0-9a-f-]{36})"', found), typed
    # Every word must be there: a word no client name holds finds nobody.
    nobody = client.get("/orders/clients", query_string={"q": "corralon norte"}).get_data(as_text=True)
    assert "data-no-match" in nobody and corralon not in nobody
