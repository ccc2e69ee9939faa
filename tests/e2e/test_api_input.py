"""Bad input gets a precise problem+json (never a 500 or HTML); the document, pages of orders, the catalog."""

from __future__ import annotations

import base64
import json
import uuid

import pytest
import requests
from openapi_spec_validator import validate

from tests.e2e.api_support import Api, new_key, order_body
from tests.integration.order_helpers import client_id, count


def test_the_openapi_document_is_valid_3_1_and_describes_every_route(live_server):
    doc = requests.get(live_server + "/api/v1/openapi.json", timeout=10).json()
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    assert {"/api/v1/orders", "/api/v1/orders/{order_id}", "/api/v1/catalog", "/api/v1/openapi.json"} <= set(doc["paths"])
    post = doc["paths"]["/api/v1/orders"]["post"]
    assert {"201", "400", "409", "413", "415", "422", "429"} <= set(post["responses"])
    assert any(p["name"] == "Idempotency-Key" for p in post["parameters"])
    assert "request_in_progress" in post["description"]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"lines": [{"sku": "COR-200", "quantity": "2"}]}, "lines[0].quantity"),
        ({"lines": [{"sku": "COR-200", "quantity": 2.5}]}, "lines[0].quantity"),
        ({"lines": [{"sku": "COR-200", "quantity": True}]}, "lines[0].quantity"),
        ({"lines": [{"sku": "COR-200", "quantity": 0}]}, "lines[0].quantity"),
        ({"lines": [{"sku": "COR-200", "quantity": -1}]}, "lines[0].quantity"),
        ({"lines": [{"sku": "COR-200", "quantity": 10**12}]}, "lines[0].quantity"),
        ({"lines": [{"sku": f"X-{i}", "quantity": 1} for i in range(2000)]}, "lines"),
        ({"lines": []}, "lines"),
        ({"lines": [{"sku": "COR\x00200", "quantity": 1}]}, "lines[0].sku"),
        ({"lines": [{"sku": "COR-200\x85", "quantity": 1}]}, "lines[0].sku"),
        ({"delivery_method": "moto\nexpress"}, "delivery_method"),
        ({"client_id": "not-a-uuid"}, "client_id"),
        ({"surprise": 1}, "surprise"),
        ({"lines": [{"sku": "COR-200", "quantity": 1, "price_cents": 1}]}, "lines[0].price_cents"),
    ],
)
def test_a_malformed_body_is_400_invalid_request_naming_the_field(live_server, db, change, field):
    response = Api(live_server, new_key(db)).post_order({**order_body(db, [("COR-200", 1)]), **change}, uuid.uuid4())
    assert response.status_code == 400 and response.json()["reason"] == "invalid_request"
    assert field in response.json()["errors"], response.json()
    assert count(db, "SELECT count(*) FROM orders") == 0


def test_a_whole_number_written_with_a_decimal_point_is_that_integer_and_a_sku_twice_is_422(live_server, db):
    # JSON Schema's "integer" (the document's) takes 2.0; the order is the one 2 would make, not a 400.
    api = Api(live_server, new_key(db))
    body = order_body(db, [("COR-200", 1)])
    created = api.post_order({**body, "lines": [{"sku": "COR-200", "quantity": 2.0}]}, uuid.uuid4())
    assert created.status_code == 201 and created.json()["lines"][0]["quantity"] == 2
    twice = api.post_order(
        {**body, "lines": [{"sku": "COR-200", "quantity": 1}, {"sku": "cor-200", "quantity": 1}]}, uuid.uuid4()
    )
    assert twice.status_code == 422 and twice.json()["reason"] == "inconsistent_request" and "lines" in twice.json()["errors"]
    assert count(db, "SELECT count(*) FROM orders") == 1


def test_unknown_client_or_warehouse_is_422_unknown_reference_naming_the_field(live_server, db):
    # The body has the document's form (any UUID is a client_id): what it names does not exist, as an unknown SKU.
    api = Api(live_server, new_key(db))
    for change, field in (({"client_id": str(uuid.uuid4())}, "client_id"), ({"deposit_id": "SUR"}, "deposit_id")):
        response = api.post_order({**order_body(db, [("COR-200", 1)]), **change}, uuid.uuid4())
        assert response.status_code == 422 and response.json()["reason"] == "unknown_reference"
        assert field in response.json()["errors"]
    assert count(db, "SELECT count(*) FROM idempotency_keys") == 0


def test_wrong_media_type_not_json_too_large_and_missing_or_bad_keys(live_server, db):
    api_key, body = new_key(db), json.dumps(order_body(db, [("COR-200", 1)]))
    api = Api(live_server, api_key)
    key = {"Idempotency-Key": str(uuid.uuid4())}
    cases = [
        ({"data": body, "headers": {**key, "Content-Type": "text/plain"}}, 415, "unsupported_media_type"),
        ({"data": "{not json", "headers": {**key, "Content-Type": "application/json"}}, 400, "invalid_request"),
        ({"data": "x" * (200 * 1024), "headers": {**key, "Content-Type": "application/json"}}, 413, "payload_too_large"),
        ({"data": body, "headers": {"Content-Type": "application/json"}}, 400, "idempotency_key_missing"),
        ({"data": body, "headers": {"Idempotency-Key": "abc", "Content-Type": "application/json"}}, 400, "invalid_request"),
    ]
    for kwargs, status, reason in cases:
        # A fresh connection each: a refused body is not read, and gunicorn closes a connection it cannot reuse.
        response = Api(live_server, api_key).call("post", "/api/v1/orders", **kwargs)
        assert (response.status_code, response.json()["reason"]) == (status, reason), kwargs["headers"]
        assert response.headers["Content-Type"] == "application/problem+json"
    quoted = api.call(
        "post", "/api/v1/orders", data=body, headers={"Idempotency-Key": f'"{uuid.uuid4()}"', "Content-Type": "application/json"}
    )
    assert quoted.status_code == 201
    for method, path in (("get", "/api/v1/nothing-here"), ("delete", "/api/v1/catalog")):
        response = api.call(method, path)
        assert response.status_code in (404, 405) and response.headers["Content-Type"] == "application/problem+json"


def test_my_orders_come_newest_first_in_keyset_pages_with_a_status_filter(live_server, db):
    api = Api(live_server, new_key(db))
    created = [api.post_order(order_body(db, [("TOR-010", n)]), uuid.uuid4()).json()["id"] for n in range(1, 6)]
    pending = api.post_order(order_body(db, [("COR-200", 5)], client="Ferretería Platino SA"), uuid.uuid4()).json()
    Api(live_server, new_key(db, "vendedor2")).post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4())
    seen, cursor = [], None
    while True:
        page = api.call("get", "/api/v1/orders?limit=2" + (f"&cursor={cursor}" if cursor else "")).json()
        seen += [o["id"] for o in page["orders"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [pending["id"], *reversed(created)]
    only = api.call("get", "/api/v1/orders?status=PENDIENTE_AUTORIZACION").json()
    assert [o["id"] for o in only["orders"]] == [pending["id"]] and only["next_cursor"] is None
    # Forged cursors: not JSON, a catalog cursor, and a well-formed pair of the wrong types (a 500 once).
    forged = [
        base64.urlsafe_b64encode(json.dumps(v).encode()).decode().rstrip("=")
        for v in (["sku", "COR-118"], ["2026-01-01T00:00:00", 5], [1, 2])
    ]
    for query in ("limit=0", "limit=101", "status=PERDIDO", "cursor=bm9wZQ", *(f"cursor={c}" for c in forged)):
        response = api.call("get", f"/api/v1/orders?{query}")
        assert response.status_code == 400 and response.json()["reason"] == "invalid_request", query


def test_the_catalog_lists_prices_and_availability_per_warehouse(live_server, db):
    items = {i["sku"]: i for i in Api(live_server, new_key(db)).call("get", "/api/v1/catalog").json()["items"]}
    assert items["COR-118"]["price_cents"] == 1250000 and items["COR-118"]["available"]["CEN"] == 1
    assert items["PRC-000"]["price_cents"] is None


def test_the_catalog_pages_and_filters_for_big_catalogs_and_lists_everything_by_default(live_server, db):
    with db.transaction() as tx:
        tx.execute("""
            WITH p AS (INSERT INTO product (sku, name)
                       SELECT 'LOT-' || lpad(n::text, 5, '0'), 'Lote de prueba ' || n FROM generate_series(1, 45) AS n
                       RETURNING id)
            INSERT INTO stock_level (product_id, warehouse_id, on_hand) SELECT id, 'CEN', 5 FROM p""")
        everything = tx.execute("SELECT sku FROM product ORDER BY sku").fetchall()
        tx.commit()
    api = Api(live_server, new_key(db))
    whole = api.call("get", "/api/v1/catalog").json()
    assert [i["sku"] for i in whole["items"]] == [r["sku"] for r in everything] and whole["next_cursor"] is None

    pages, cursor = [], None
    while True:
        page = api.call("get", "/api/v1/catalog?q=lot&limit=20" + (f"&cursor={cursor}" if cursor else "")).json()
        pages.append([i["sku"] for i in page["items"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [20, 20, 5]
    assert sum(pages, []) == [f"LOT-{n:05d}" for n in range(1, 46)]
    # A prefix of the name's first word finds too ("Cable unipolar …" is CAB-045), as on the form.
    assert [i["sku"] for i in api.call("get", "/api/v1/catalog?q=cable").json()["items"]] == ["CAB-045"]
    # Any word of the SKU or the name, each of them, paged by SKU as the prefix was.
    assert [i["sku"] for i in api.call("get", "/api/v1/catalog?q=cortadora+200").json()["items"]] == ["COR-200"]
    pages, cursor = [], None
    while True:
        page = api.call("get", "/api/v1/catalog?q=prueba+1&limit=5" + (f"&cursor={cursor}" if cursor else "")).json()
        pages.append([i["sku"] for i in page["items"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert sum(pages, []) == [f"LOT-{n:05d}" for n in (1, *range(10, 20), 21, 31, 41)]
    assert [len(p) for p in pages] == [5, 5, 4]
    for query in ("limit=0", "limit=501", "cursor=bm9wZQ", "cursor=WzEsMl0", "q=" + "x" * 41, "sort=sku"):
        response = api.call("get", f"/api/v1/catalog?{query}")
        assert response.status_code == 400 and response.json()["reason"] == "invalid_request", query


def test_my_orders_filter_by_number_client_sku_and_days_like_the_back_office(live_server, db):
    api = Api(live_server, new_key(db))
    tor = api.post_order(order_body(db, [("TOR-010", 1)]), uuid.uuid4()).json()
    cor = api.post_order(order_body(db, [("COR-200", 1)], client="Obras Rápidas SRL"), uuid.uuid4()).json()

    def ids(query: str) -> list[str]:
        answer = api.call("get", f"/api/v1/orders?{query}")
        assert answer.status_code == 200, (query, answer.text)
        return [o["id"] for o in answer.json()["orders"]]

    assert ids(f"number={tor['number']}") == [tor["id"]]
    assert ids(f"number={int(tor['number'][2:])}") == [tor["id"]]
    assert ids(f"client_id={client_id(db, 'Obras Rápidas SRL')}") == [cor["id"]]
    assert ids("sku=tor-010") == [tor["id"]]
    assert ids(f"sku=COR-200&client_id={client_id(db, 'Corralón del Sur')}") == []
    assert ids("created_from=2000-01-01&created_to=2000-12-31") == []
    assert set(ids("created_from=2000-01-01")) == {tor["id"], cor["id"]}
    # A client_id or a number no order has is a filter that matches nothing, not an error.
    assert ids(f"client_id={uuid.uuid4()}") == [] and ids("number=P-999999") == []
    inverted = api.call("get", "/api/v1/orders?created_from=2026-12-02&created_to=2026-12-01")
    assert inverted.status_code == 422 and inverted.json()["reason"] == "inconsistent_request"
    assert "created_to" in inverted.json()["errors"]
    for query in (
        "created_from=ayer",
        "created_from=0",  # pydantic alone read it as 1970-01-01
        "number=0",
        "sku=COR%00200",
        "cursor=" + "0" * 201,
        "number=doce",
        "client_id=not-a-uuid",
        "status=CONFIRMADO&status=ANULADO",  # one value per parameter, not the first of two
        "limit=5&limit=6",
    ):
        response = api.call("get", f"/api/v1/orders?{query}")
        assert response.status_code == 400 and response.json()["reason"] == "invalid_request", query


def test_a_405_names_the_methods_the_address_takes(live_server, db):
    api = Api(live_server, new_key(db))
    response = api.call("delete", "/api/v1/catalog")
    assert response.status_code == 405 and response.headers["Content-Type"] == "application/problem+json"
    assert {m.strip() for m in response.headers["Allow"].split(",")} >= {"GET"}


def test_an_over_long_url_is_a_414_in_the_sites_own_format(live_server, db):
    api = Api(live_server, new_key(db))
    long_query = "sku=" + "A" * 5000  # past the app's 4,096 characters, inside gunicorn's 8,190
    response = api.call("get", f"/api/v1/orders?{long_query}")
    assert response.status_code == 414 and response.headers["Content-Type"] == "application/problem+json"
    assert response.json()["reason"] == "uri_too_long"
    page = requests.get(f"{live_server}/orders?{long_query}", timeout=10)
    assert page.status_code == 414 and "text/html" in page.headers["Content-Type"] and "demasiado larga" in page.text
