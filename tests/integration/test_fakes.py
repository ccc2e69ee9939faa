"""The sandboxed fakes keep their contract (CONTRACT.md): dedup by Idempotency-Key and the T12 modes."""

from __future__ import annotations

import threading
import time

import pytest
import requests

pytestmark = pytest.mark.no_db  # the fakes need neither Postgres nor Redis

RESOURCES = [("fiscal", "invoices", "invoice_number"), ("warehouse", "handoffs", "ticket")]


def post(fakes, dest, resource, key, body, timeout=10):
    headers = {"Idempotency-Key": key} if key else {}
    return requests.post(f"{fakes.url(dest)}/{resource}", json=body, headers=headers, timeout=timeout)


@pytest.mark.parametrize("dest,resource,field", RESOURCES)
def test_same_key_same_body_returns_the_same_answer_and_one_effect(fakes, dest, resource, field):
    first = post(fakes, dest, resource, "key-1", {"order_id": "o-1", "n": 1})
    again = post(fakes, dest, resource, "key-1", {"n": 1, "order_id": "o-1"})  # key order does not matter
    assert first.status_code == again.status_code == 201
    assert first.json() == again.json() and first.json()[field]
    effects = fakes.effects(dest)
    assert [e["key"] for e in effects] == ["key-1"] and effects[0]["deliveries"] == 2


@pytest.mark.parametrize("dest,resource,field", RESOURCES)
def test_same_key_other_body_is_422_and_no_new_effect(fakes, dest, resource, field):
    assert post(fakes, dest, resource, "key-1", {"order_id": "o-1"}).status_code == 201
    conflict = post(fakes, dest, resource, "key-1", {"order_id": "o-2"})
    assert conflict.status_code == 422
    effects = fakes.effects(dest)
    assert len(effects) == 1 and effects[0]["payload"] == {"order_id": "o-1"}


@pytest.mark.parametrize("dest,resource,field", RESOURCES)
def test_get_by_key_tells_whether_it_was_applied(fakes, dest, resource, field):
    assert fakes.effect(dest, "key-9") is None
    answer = post(fakes, dest, resource, "key-9", {"order_id": "o-9"}).json()
    effect = fakes.effect(dest, "key-9")
    assert effect["key"] == "key-9" and effect["result"] == answer and effect["applied_at"]


def test_idempotency_key_and_json_body_are_required(fakes):
    assert post(fakes, "fiscal", "invoices", None, {"order_id": "o"}).status_code == 400
    no_json = requests.post(fakes.fiscal_url + "/invoices", data="x", headers={"Idempotency-Key": "k"}, timeout=5)
    assert no_json.status_code == 400
    assert fakes.effects("fiscal") == []


def test_distinct_keys_get_distinct_invoice_numbers(fakes):
    numbers = {post(fakes, "fiscal", "invoices", f"k{i}", {"i": i}).json()["invoice_number"] for i in range(5)}
    assert len(numbers) == 5


def test_concurrent_requests_with_one_key_apply_one_effect(fakes):
    answers = []

    def send():
        answers.append(post(fakes, "warehouse", "handoffs", "race", {"order_id": "o"}).json())

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(fakes.effects("warehouse")) == 1
    assert len({a["ticket"] for a in answers}) == 1


def test_error_modes_apply_nothing_and_run_out_after_times(fakes):
    fakes.set_mode("fiscal", "error_5xx", times=2)
    assert post(fakes, "fiscal", "invoices", "k", {"a": 1}).status_code == 503
    assert post(fakes, "fiscal", "invoices", "k", {"a": 1}).status_code == 503
    assert fakes.effects("fiscal") == []
    assert post(fakes, "fiscal", "invoices", "k", {"a": 1}).status_code == 201
    fakes.set_mode("fiscal", "error_4xx")  # no times: until changed
    for _ in range(3):
        assert post(fakes, "fiscal", "invoices", "k2", {"a": 2}).status_code == 400
    assert fakes.effect("fiscal", "k2") is None
    fakes.set_mode("fiscal", "ok")
    assert post(fakes, "fiscal", "invoices", "k2", {"a": 2}).status_code == 201


def test_timeout_before_waits_delay_and_applies_nothing(fakes):
    fakes.set_mode("fiscal", "timeout_before", times=1, delay_s=1.5)
    with pytest.raises(requests.Timeout):
        post(fakes, "fiscal", "invoices", "k", {"a": 1}, timeout=0.3)
    time.sleep(2)  # let the fake finish its slow answer
    assert fakes.effect("fiscal", "k") is None
    assert post(fakes, "fiscal", "invoices", "k", {"a": 1}).status_code == 201  # times=1 ran out


def test_timeout_after_applies_the_effect_then_answers_too_late(fakes):
    fakes.set_mode("warehouse", "timeout_after", times=1, delay_s=1.5)
    with pytest.raises(requests.Timeout):
        post(fakes, "warehouse", "handoffs", "k", {"a": 1}, timeout=0.3)
    applied = fakes.effect("warehouse", "k")
    assert applied is not None
    retry = post(fakes, "warehouse", "handoffs", "k", {"a": 1})
    assert retry.status_code == 201 and retry.json() == applied["result"]
    assert len(fakes.effects("warehouse")) == 1


def test_delay_s_bounds_the_slow_answer(fakes):
    fakes.set_mode("fiscal", "timeout_after", delay_s=0.2)
    started = time.monotonic()
    answer = post(fakes, "fiscal", "invoices", "k", {"a": 1}, timeout=10)
    assert answer.status_code == 201
    assert time.monotonic() - started < 10  # generous: only proves it does not wait the default 30 s


def test_invalid_mode_is_refused(fakes):
    response = requests.post(fakes.fiscal_url + "/__sandbox/mode", json={"mode": "chaos"}, timeout=5)
    assert response.status_code == 400


def test_fixture_sets_the_urls_in_the_environment(fakes):
    import os

    assert os.environ["FISCAL_URL"] == fakes.fiscal_url
    assert os.environ["WAREHOUSE_URL"] == fakes.warehouse_url
