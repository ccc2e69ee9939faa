"""Payments through the Orders API (an accounting system), on gunicorn and real Postgres; and the document
that describes the order's whole life (CONTRACT.md "Order lifecycle").

A payment lowers the client's exposure once per Idempotency-Key; every refusal keeps nothing. Every
answer is checked against the OpenAPI document; the books hold after each test's effects.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import psycopg
import pytest
import requests
from openapi_spec_validator import validate

from nexo.outbox.registry import CANCELLATION_OF, ROUTES
from tests.e2e.api_support import Api, books_hold, new_key, post_all_at_once
from tests.helpers import ROOT
from tests.integration.order_helpers import client_id, count, exposure

PLATINO = "Ferretería Platino SA"


def test_a_payment_lowers_the_exposure_once_and_a_retry_is_the_same_payment(live_server, db):
    owed, platino = exposure(db, PLATINO), client_id(db, PLATINO)
    api, key = Api(live_server, new_key(db, "laura", name="contable")), uuid.uuid4()

    paid = api.pay(platino, 100_000_00, " recibo 0042 ", key)

    assert paid.status_code == 201 and "Idempotent-Replayed" not in paid.headers
    body = paid.json()
    assert {k: body[k] for k in ("client_id", "amount_cents", "reference", "exposure_cents")} == {
        "client_id": str(platino),
        "amount_cents": 100_000_00,
        "reference": "recibo 0042",
        "exposure_cents": owed - 100_000_00,
    }
    assert exposure(db, PLATINO) == owed - 100_000_00
    again = api.pay(platino, 100_000_00, "recibo 0042", key)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true" and again.json() == body
    other = api.pay(platino, 5, "recibo 0042", key)
    assert other.status_code == 422 and other.json()["reason"] == "idempotency_key_reused"
    assert exposure(db, PLATINO) == owed - 100_000_00 and count(db, "SELECT count(*) FROM payment") == 1
    with db.reading() as conn:
        audit = conn.execute("SELECT actor, details FROM audit_log WHERE action = 'client.payment_recorded'").fetchall()
        key_id = conn.execute("SELECT id FROM api_key WHERE name = 'contable'").fetchone()["id"]
    assert [(a["actor"], a["details"]["api_key_id"], a["details"]["payment_id"]) for a in audit] == [
        ("laura", key_id, body["id"])
    ]
    books_hold(db)


def test_one_payment_key_sent_by_eight_threads_at_once_lowers_the_exposure_once(live_server, db):
    owed, platino, key, api_key = exposure(db, PLATINO), client_id(db, PLATINO), uuid.uuid4(), new_key(db, "laura")
    responses = post_all_at_once([lambda: Api(live_server, api_key).pay(platino, 250_000_00, "transferencia 77", key)] * 8)
    assert [r.status_code for r in responses] == [201] * 8
    assert len({r.json()["id"] for r in responses}) == 1
    assert sorted(r.headers.get("Idempotent-Replayed", "") for r in responses) == [""] + ["true"] * 7
    assert exposure(db, PLATINO) == owed - 250_000_00 and count(db, "SELECT count(*) FROM payment") == 1
    books_hold(db)


def test_more_than_the_exposure_is_422_an_unknown_client_404_and_a_seller_403(live_server, db):
    owed, platino, api = exposure(db, PLATINO), client_id(db, PLATINO), Api(live_server, new_key(db, "laura"))
    over = api.pay(platino, owed + 1)
    assert over.status_code == 422 and over.json()["reason"] == "payment_exceeds_exposure"
    assert over.json()["exposure_cents"] == owed
    sur = api.pay(client_id(db, "Corralón del Sur"), 1)  # owes nothing yet
    assert sur.status_code == 422 and sur.json()["exposure_cents"] == 0
    assert api.pay(uuid.uuid4(), 1).status_code == 404
    seller = Api(live_server, new_key(db, "vendedor1")).pay(platino, 1)
    assert seller.status_code == 403 and seller.json()["reason"] == "forbidden"
    owner = Api(live_server, new_key(db, "marta")).pay(platino, 1)  # reads accounts, does not record payments
    assert owner.status_code == 403
    assert exposure(db, PLATINO) == owed and count(db, "SELECT count(*) FROM payment") == 0
    assert api.pay(platino, owed).json()["exposure_cents"] == 0  # all of it, exactly
    books_hold(db)


@pytest.mark.parametrize(
    "change, field",
    [
        ({"amount_cents": 0}, "amount_cents"),
        ({"amount_cents": -100}, "amount_cents"),
        ({"amount_cents": 1234.56}, "amount_cents"),
        ({"amount_cents": "123456"}, "amount_cents"),
        ({"amount_cents": True}, "amount_cents"),
        ({"amount_cents": 10**16}, "amount_cents"),
        ({"amount_cents": None}, "amount_cents"),
        ({"reference": ""}, "reference"),
        ({"reference": "  "}, "reference"),
        ({"reference": "recibo\x000042"}, "reference"),
        ({"reference": "x" * 201}, "reference"),
        ({"currency": "USD"}, "currency"),
    ],
)
def test_a_malformed_payment_is_400_naming_the_field_and_keeps_nothing(live_server, db, change, field):
    body = {"amount_cents": 100, "reference": "recibo 1", **change}
    response = Api(live_server, new_key(db, "laura")).call(
        "post",
        f"/api/v1/clients/{client_id(db, PLATINO)}/payments",
        json=body,
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 400 and response.json()["reason"] == "invalid_request"
    assert field in response.json()["errors"], response.json()
    assert count(db, "SELECT count(*) FROM payment") == 0


def test_a_payment_without_a_uuid_key_or_json_is_refused(live_server, db):
    path, key = f"/api/v1/clients/{client_id(db, PLATINO)}/payments", new_key(db, "laura")
    body, json_type = '{"amount_cents": 100, "reference": "r"}', {"Content-Type": "application/json"}
    for headers, data, status, reason in (
        (json_type, body, 400, "idempotency_key_missing"),
        ({**json_type, "Idempotency-Key": "12345"}, body, 400, "invalid_request"),
        ({"Idempotency-Key": str(uuid.uuid4()), "Content-Type": "application/x-www-form-urlencoded"}, body, 415, None),
        ({**json_type, "Idempotency-Key": str(uuid.uuid4())}, "amount=100", 400, "invalid_request"),
    ):
        response = Api(live_server, key).call("post", path, data=data, headers=headers)
        assert response.status_code == status and response.json()["reason"] == (reason or "unsupported_media_type"), headers
    assert count(db, "SELECT count(*) FROM payment") == 0


def test_a_key_whose_first_request_is_still_running_is_409_with_retry_after(live_server, db, settings):
    platino, api, key = client_id(db, PLATINO), Api(live_server, new_key(db, "laura")), uuid.uuid4()
    owed = exposure(db, PLATINO)
    with psycopg.connect(settings.database_url) as first:  # the first request with the key, not committed yet
        laura = first.execute("SELECT id FROM app_user WHERE username = 'laura'").fetchone()[0]
        first.execute(
            "INSERT INTO payment (id, client_id, amount_cents, reference, created_by, idempotency_key, request_hash)"
            " VALUES (%s, %s, 1, 'r', %s, %s, 'x')",
            [uuid.uuid4(), platino, laura, key],
        )
        busy = api.pay(platino, 100, "recibo 9", key)
        first.rollback()
    assert busy.status_code == 409 and busy.json()["reason"] == "request_in_progress"
    assert busy.headers["Retry-After"] == "1"
    assert api.pay(platino, 100, "recibo 9", key).status_code == 201  # the first one rolled back: this one goes
    assert exposure(db, PLATINO) == owed - 100
    books_hold(db)


# --- the document -------------------------------------------------------------------------------


def test_the_document_describes_cancel_shipments_payments_their_keys_and_every_reason(live_server):
    doc = requests.get(live_server + "/api/v1/openapi.json", timeout=10).json()
    validate(doc)
    routes = {
        ("/api/v1/orders/{order_id}/cancel", "post"): {"200", "400", "401", "403", "404", "409", "415", "429", "503"},
        ("/api/v1/orders/{order_id}/shipments", "post"): {"201", "400", "401", "403", "404", "409", "415", "422", "503"},
        ("/api/v1/orders/{order_id}/shipments/{shipment_id}", "get"): {"200", "401", "403", "404"},
        ("/api/v1/clients/{client_id}/payments", "post"): {"201", "400", "401", "403", "404", "409", "415", "422", "503"},
    }
    for (path, method), statuses in routes.items():
        operation = doc["paths"][path][method]
        assert statuses <= set(operation["responses"]), (path, sorted(operation["responses"]))
        keyed = any(p["name"] == "Idempotency-Key" and p["required"] for p in operation.get("parameters", []))
        assert keyed == path.endswith(("/shipments", "/payments")), path
    described = " ".join(
        response.get("description", "")
        for operations in doc["paths"].values()
        for operation in operations.values()
        for response in operation["responses"].values()
    )
    new = {"order_not_cancellable", "order_not_dispatchable", "exceeds_remaining", "payment_exceeds_exposure"}
    assert all(reason in described for reason in new)
    assert new <= set(doc["components"]["schemas"]["Problem"]["properties"]["reason"]["enum"])
    assert "Location" in doc["paths"]["/api/v1/orders/{order_id}/shipments"]["post"]["responses"]["201"]["headers"]
    schemas = doc["components"]["schemas"]
    assert {"ANULADO", "DESPACHADO_PARCIAL", "DESPACHADO"} <= set(schemas["OrderStatus"]["enum"])
    assert "ANULADA" in schemas["BillingStatus"]["enum"] and "RETIRADO" in schemas["EventStatus"]["enum"]
    # Every event an order can carry: its effects, their cancellations (ADR-017) and the notices to the
    # integration's webhooks (ADR-022), as the registry routes them.
    event_types = set(schemas["EventOut"]["properties"]["type"]["enum"])
    assert set(CANCELLATION_OF) | set(CANCELLATION_OF.values()) <= event_types
    assert event_types == set(ROUTES)
    assert "dispatched" in schemas["LineOut"]["required"]


# A fresh process whose first requests all ask for the document at once; spectree's build is slowed so
# that they all start it before any finishes, as the threads of a fresh gunicorn worker can.
_FIRST_REQUESTS = """
import json, threading, time
from spectree import SpecTree
build = SpecTree._generate_spec
SpecTree._generate_spec = lambda self: (time.sleep(0.3), build(self))[1]
from nexo import create_app
app = create_app(test_config={"TESTING": True})
docs, barrier = [], threading.Barrier(4)
def ask():
    client = app.test_client()
    barrier.wait()
    docs.append(client.get("/api/v1/openapi.json").get_json())
threads = [threading.Thread(target=ask) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps([sorted(doc["components"]["schemas"]) for doc in docs]))
"""


def test_the_first_requests_of_a_fresh_process_all_get_the_whole_document():
    # spectree moves nested models out of its cache as it builds: a second build at the same moment used to
    # publish a document whose $refs pointed nowhere (nexo/api/spec.py document_of builds it once).
    run = subprocess.run(
        [sys.executable, "-c", _FIRST_REQUESTS], check=False, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr[-2000:]
    components = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(components) == 4
    for names in components:
        assert {"OrderStatus", "LineOut", "EventOut", "ShippedLine"} <= set(names)
