"""Helpers of the Orders API tests: keys, bodies, and every response checked against the OpenAPI document."""

from __future__ import annotations

import functools
import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests
from jsonschema import Draft202012Validator

from nexo.api import keys
from nexo.books import read_books
from tests.integration.order_helpers import client_id

_PATH_PARAM = re.compile(r"\{[^}]+\}")


def new_key(db, username: str = "vendedor1", name: str | None = None) -> str:
    """A fresh API key acting as username."""
    return keys.create_key(db, name=name or f"test-{uuid.uuid4().hex[:8]}", username=username, actor="test")


def order_body(db, lines, client: str = "Corralón del Sur", deposit: str = "CEN", **extra) -> dict:
    """A POST /api/v1/orders body."""
    return {
        "client_id": str(client_id(db, client)),
        "deposit_id": deposit,
        "lines": [{"sku": sku, "quantity": qty} for sku, qty in lines],
        **extra,
    }


class Api:
    """A requests-based API client bound to one key; every response is checked against the document."""

    def __init__(self, base_url: str, key: str | None):
        self.base = base_url
        self.http = requests.Session()
        if key:
            self.http.headers["Authorization"] = f"Bearer {key}"

    def post_order(self, body, key=None, **kwargs) -> requests.Response:
        headers = {"Idempotency-Key": str(key)} if key is not None else {}
        headers.update(kwargs.pop("headers", {}))
        return self.call("post", "/api/v1/orders", json=body, headers=headers, **kwargs)

    def cancel(self, order_id, reason="el cliente llamó para anularlo", **kwargs) -> requests.Response:
        return self.call("post", f"/api/v1/orders/{order_id}/cancel", json={"reason": reason}, **kwargs)

    def ship(self, order_id, lines, key=None, **kwargs) -> requests.Response:
        body = {"lines": [{"sku": sku, "quantity": qty} for sku, qty in lines]}
        headers = {"Idempotency-Key": str(key or uuid.uuid4()), **kwargs.pop("headers", {})}
        return self.call("post", f"/api/v1/orders/{order_id}/shipments", json=body, headers=headers, **kwargs)

    def pay(self, client, amount_cents, reference="transferencia 0001", key=None, **kwargs) -> requests.Response:
        body = {"amount_cents": amount_cents, "reference": reference}
        headers = {"Idempotency-Key": str(key or uuid.uuid4()), **kwargs.pop("headers", {})}
        return self.call("post", f"/api/v1/clients/{client}/payments", json=body, headers=headers, **kwargs)

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        response = self.http.request(method.upper(), self.base + path, **kwargs)
        assert_documented(spec_of(self.base), method, path.split("?", maxsplit=1)[0], response)
        return response


def api_order(db, base_url: str, lines, *, seller: str = "vendedor1", client: str = "Corralón del Sur") -> dict:
    """A new order through the API, as `seller`; its JSON."""
    response = Api(base_url, new_key(db, seller)).post_order(order_body(db, lines, client=client), uuid.uuid4())
    assert response.status_code == 201, response.text
    return response.json()


def post_all_at_once(calls) -> list:
    """Run every zero-argument call at the same moment (one barrier), each on its own thread."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(run, calls))


def books_hold(db) -> None:
    """Stock and credit add up (nexo.books, what `flask check` runs)."""
    failed = [finding for finding in read_books(db) if not finding.ok]
    assert failed == [], failed


@functools.cache
def spec_of(base_url: str) -> dict:
    """The live server's OpenAPI document (fetched once per server)."""
    return requests.get(base_url + "/api/v1/openapi.json", timeout=10).json()


def assert_documented(doc: dict, method: str, path: str, response) -> None:
    """The response's status, media type and body are the ones the document promises for this operation."""
    operation = _operation(doc, method, path)
    status = str(response.status_code)
    assert status in operation["responses"], f"{method.upper()} {path} answered {status}, not in the document"
    content = operation["responses"][status].get("content")
    if not content:
        return
    media_type = response.headers.get("Content-Type", "").split(";")[0]
    assert media_type in content, f"{media_type} not documented for {status}: {list(content)}"
    schema = {**content[media_type]["schema"], "components": doc["components"]}
    body = response.json() if callable(response.json) else response.json  # requests or Flask's test client
    Draft202012Validator(schema).validate(body)


def _operation(doc: dict, method: str, path: str) -> dict:
    for template, operations in doc["paths"].items():
        if re.fullmatch(_PATH_PARAM.sub(r"[^/]+", template), path) and method in operations:
            return operations[method]
    # A route the API does not have (404/405): still problem+json, described by the Problem schema.
    return {
        "responses": {
            str(s): {"content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}
            for s in (404, 405)
        }
    }
