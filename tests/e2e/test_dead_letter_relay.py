"""Dead letters end to end: the real relay (RQ worker + sweeper processes), the fakes, and the admin pages.

A permanent error opens exactly one pending dead letter; replaying it through the page with the fake
healthy delivers it exactly once (same Idempotency-Key); a group replay delivers each event once.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from nexo.outbox.wakeup import request_delivery
from tests.dead_letter_factory import audit_rows
from tests.helpers import csrf_token
from tests.relay_fixtures import event_rows, insert_confirmed_orders, relay_settings, wait_until

pytestmark = pytest.mark.slow


def dead_letters_of(db, event_ids) -> list[dict]:
    with db.reading() as conn:
        return conn.execute(
            "SELECT * FROM dead_letter WHERE event_id = ANY(%s::uuid[]) ORDER BY id", [[str(e) for e in event_ids]]
        ).fetchall()


def status_of(db, event_ids) -> set[str]:
    return {r["status"] for r in event_rows(db, event_ids).values()}


def fail_fiscal_events(db, redis_client, fakes, relay, count: int) -> list:
    """Orders whose fiscal event the fake refuses with a permanent 4xx, until each has its dead letter."""
    fakes.set_mode("fiscal", "error_4xx")
    relay.start_workers(1)
    relay.start_sweepers(1)
    event_ids = [o.fiscal_event_id for o in insert_confirmed_orders(db, count)]
    request_delivery(event_ids, connection=redis_client, settings=relay_settings())
    wait_until(
        lambda: len(dead_letters_of(db, event_ids)) == count and status_of(db, event_ids) == {"FALLIDO"},
        timeout=30,
        message=f"{count} fiscal events in FALLIDO with their dead letters",
    )
    fakes.set_mode("fiscal", "ok")
    return event_ids


@pytest.fixture
def marta(client, auth, app, fakes, monkeypatch):
    # The session app read its settings before the fakes existed; the key check reads the URL from them.
    monkeypatch.setitem(
        app.config,
        "NEXO_SETTINGS",
        dataclasses.replace(app.config["NEXO_SETTINGS"], fiscal_url=fakes.fiscal_url, warehouse_url=fakes.warehouse_url),
    )
    auth.login("marta")
    return client


def test_permanent_error_then_replay_delivers_exactly_once(db, redis_client, fakes, relay, marta):
    [event_id] = fail_fiscal_events(db, redis_client, fakes, relay, 1)
    [dl] = dead_letters_of(db, [event_id])
    assert (dl["status"], dl["destination"], dl["http_status"], dl["error_signature"]) == ("pending", "fiscal", 400, "fiscal:400")
    assert len(audit_rows(db, "dead_letter.opened", dl["id"])) == 1

    listed = marta.get("/admin/dead-letters?destination=fiscal&status=pending")
    assert listed.headers["X-Total-Count"] == "1" and f'data-dead-letter-id="{dl["id"]}"' in listed.get_data(as_text=True)
    page = marta.get(f"/admin/dead-letters/{dl['id']}").get_data(as_text=True)
    assert len(re.findall(r"<tr data-attempt-no=", page)) == 1 and "HTTP 400" in page

    check = marta.post(f"/admin/dead-letters/{dl['id']}/check-key", data={"csrf_token": csrf_token(page)})
    assert check.status_code == 303
    assert 'data-key-check="not_applied"' in marta.get(f"/admin/dead-letters/{dl['id']}").get_data(as_text=True)

    replay = marta.post(f"/admin/dead-letters/{dl['id']}/replay", data={"csrf_token": csrf_token(page)})
    assert replay.status_code == 303
    wait_until(lambda: status_of(db, [event_id]) == {"ENTREGADO"}, timeout=30, message="replayed event delivered")
    [effect] = [e for e in fakes.effects("fiscal") if e["key"] == str(event_id)]
    assert effect["deliveries"] == 1
    event = event_rows(db, [event_id])[str(event_id)]
    assert event["attempts"] == 2  # every try counts (CONTRACT.md): the refused one and the good one

    again = marta.post(f"/admin/dead-letters/{dl['id']}/replay", data={"csrf_token": csrf_token(page)})
    assert again.status_code == 409
    marta.post(f"/admin/dead-letters/{dl['id']}/check-key", data={"csrf_token": csrf_token(page)})
    assert [r["details"]["answer"] for r in audit_rows(db, "dead_letter.key_checked", dl["id"])] == ["not_applied", "applied"]
    assert len(dead_letters_of(db, [event_id])) == 1 and len(fakes.effects("fiscal")) == 1


def test_group_replay_delivers_each_event_once_with_one_audit_row_each(db, redis_client, fakes, relay, marta):
    event_ids = fail_fiscal_events(db, redis_client, fakes, relay, 3)
    preview = marta.get("/admin/dead-letters/bulk?action=replay&destination=fiscal&signature=fiscal:400")
    html = preview.get_data(as_text=True)
    assert 'data-bulk-count="3"' in html
    ids = re.search(r'name="ids" type="hidden" value="([^"]*)"', html).group(1)
    done = marta.post(
        "/admin/dead-letters/bulk",
        data={
            "csrf_token": csrf_token(html),
            "action": "replay",
            "destination": "fiscal",
            "signature": "fiscal:400",
            "ids": ids,
            "expected_count": "3",
        },
    )
    assert done.status_code == 303
    wait_until(lambda: status_of(db, event_ids) == {"ENTREGADO"}, timeout=30, message="the group delivered")
    effects = {e["key"]: e for e in fakes.effects("fiscal")}
    assert sorted(effects) == sorted(str(e) for e in event_ids)
    assert {e["deliveries"] for e in effects.values()} == {1}
    assert len(audit_rows(db, "dead_letter.replayed")) == 3
    assert {r["status"] for r in dead_letters_of(db, event_ids)} == {"resolved"}
