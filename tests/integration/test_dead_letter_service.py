"""Dead-letter use cases on real Postgres: replay, discard, groups, isolation, the candidate cap, the key check."""

from __future__ import annotations

import dataclasses
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psycopg
import pytest

from nexo.deadletters import keycheck, queries, service
from nexo.outbox import wakeup
from tests.dead_letter_factory import audit_rows, fail_event, make_dead_letter, row
from tests.relay_support import without_queued_wakeup


def test_reaching_fallido_writes_one_pending_dead_letter_and_its_system_audit_row(db):
    made = make_dead_letter(db, attempts=3, http_status=503, error="503 Service Unavailable")
    dl = row(db, "SELECT * FROM dead_letter WHERE event_id = %s", [made["event_id"]])
    assert (dl["status"], dl["destination"], dl["attempts"], dl["error_signature"]) == ("pending", "fiscal", 3, "fiscal:503")
    assert dl["first_failed_at"] < dl["last_failed_at"]
    [opened] = audit_rows(db, "dead_letter.opened", made["id"])
    assert opened["actor"] == "system" and opened["details"]["event_id"] == str(made["event_id"])


def test_replay_resolves_requeues_the_same_event_and_audits_in_one_go(db):
    made = make_dead_letter(db, attempts=2)
    result = service.replay(db, made["id"], "marta", "proveedor arreglado")
    assert (result.outcome, result.event_id) == ("done", made["event_id"])
    dl = row(db, "SELECT * FROM dead_letter WHERE id = %s", [made["id"]])
    assert (dl["status"], dl["resolved_by"], dl["resolution_note"]) == ("resolved", "marta", "proveedor arreglado")
    event = row(db, "SELECT * FROM outbox_event WHERE id = %s", [made["event_id"]])
    assert event["status"] == "PENDIENTE" and event["locked_until"] is None and event["claim_token"] is None
    # attempts counts every try (CONTRACT.md) and the failed cycle's history stays.
    assert event["attempts"] == 2
    assert row(db, "SELECT count(*) AS n FROM delivery_attempt WHERE event_id = %s", [made["event_id"]])["n"] == 2
    [replayed] = audit_rows(db, "dead_letter.replayed", made["id"])
    assert replayed["actor"] == "marta" and replayed["details"]["event_id"] == str(made["event_id"])


def test_replay_and_group_replay_wake_the_relay_after_commit(db, redis_client, settings):
    single, *group = [make_dead_letter(db) for _ in range(3)]
    ring = wakeup.Wakeup(redis_client, settings)
    service.replay(db, single["id"], "marta", wakeup=ring)
    service.act_on_group(
        db,
        action="replay",
        destination="fiscal",
        ids=[g["id"] for g in group],
        actor="marta",
        signature=None,
        note=None,
        wakeup=ring,
    )
    # One RQ wake-up waiting per replayed event (the sweeper would find them anyway, only later).
    assert without_queued_wakeup(redis_client, settings, [m["event_id"] for m in (single, *group)]) == []


def test_second_replay_is_a_conflict_naming_who_resolved_it(db):
    made = make_dead_letter(db)
    assert service.replay(db, made["id"], "marta").outcome == "done"
    again = service.replay(db, made["id"], "laura")
    assert (again.outcome, again.status, again.resolved_by) == ("conflict", "resolved", "marta")
    assert len(audit_rows(db, "dead_letter.replayed", made["id"])) == 1


def test_discard_after_replay_is_a_conflict_and_unknown_id_is_not_found(db):
    made = make_dead_letter(db)
    service.replay(db, made["id"], "marta")
    assert service.discard(db, made["id"], "laura", "no va").outcome == "conflict"
    assert service.discard(db, 999_999, "marta", "no va").outcome == "not_found"
    assert service.replay(db, 999_999, "marta").outcome == "not_found"


def test_discard_keeps_the_event_fallido_and_records_reason_and_actor(db):
    made = make_dead_letter(db)
    assert service.discard(db, made["id"], "marta", "  factura emitida a mano  ").outcome == "done"
    dl = row(db, "SELECT * FROM dead_letter WHERE id = %s", [made["id"]])
    assert (dl["status"], dl["resolved_by"], dl["resolution_note"]) == ("discarded", "marta", "factura emitida a mano")
    assert row(db, "SELECT status FROM outbox_event WHERE id = %s", [made["event_id"]])["status"] == "FALLIDO"
    [discarded] = audit_rows(db, "dead_letter.discarded", made["id"])
    assert discarded["details"]["reason"] == "factura emitida a mano"


@pytest.mark.parametrize("reason", ["", "   ", None])
def test_discard_refuses_an_empty_reason(db, reason):
    made = make_dead_letter(db)
    with pytest.raises(ValueError):
        service.discard(db, made["id"], "marta", reason)
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "pending"


def test_replay_that_cannot_requeue_the_event_changes_nothing(db):
    made = make_dead_letter(db)
    with db.transaction() as tx:  # break the invariant on purpose: the event is not FALLIDO any more
        tx.execute("UPDATE outbox_event SET status = 'ENTREGADO' WHERE id = %s", [made["event_id"]])
        tx.commit()
    assert service.replay(db, made["id"], "marta").outcome == "conflict"
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [made["id"]])["status"] == "pending"
    assert audit_rows(db, "dead_letter.replayed") == []


def test_a_replayed_event_that_fails_again_opens_a_new_dead_letter(db):
    made = make_dead_letter(db, attempts=2)
    service.replay(db, made["id"], "marta")
    with db.transaction() as tx:
        second = fail_event(tx.conn, made["event_id"], destination="fiscal", attempts=1, http_status=422, error="otra vez")
        tx.commit()
    assert second != made["id"]
    detail = service.view_dead_letter(db, second, "marta")
    assert [s["id"] for s in detail.siblings] == [second, made["id"]]
    assert len(detail.attempts) == 3


def test_group_action_touches_only_previewed_ids_of_its_destination(db):
    first = [make_dead_letter(db)["id"] for _ in range(3)]
    other_destination = make_dead_letter(db, destination="warehouse", http_status=422)["id"]
    ids, more = service.preview_group(db, queries.ListFilter(destinations=("fiscal",), signature="fiscal:422"))
    assert sorted(ids) == sorted(first) and not more
    late = make_dead_letter(db)["id"]  # appears after the preview
    service.discard(db, first[0], "laura", "ya resuelto")  # someone else resolves one meanwhile
    result = service.act_on_group(
        db, action="replay", destination="fiscal", ids=ids + [other_destination], actor="marta", signature="fiscal:422", note=None
    )
    assert (sorted(result.touched), result.skipped) == (sorted(first[1:]), 2)
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [late])["status"] == "pending"
    assert row(db, "SELECT status FROM dead_letter WHERE id = %s", [other_destination])["status"] == "pending"
    rows = audit_rows(db, "dead_letter.replayed")
    assert sorted(int(r["object_id"]) for r in rows) == sorted(first[1:])
    assert len({r["details"]["batch"] for r in rows}) == 1


def test_group_discard_needs_a_reason_and_audits_each_item(db):
    ids = [make_dead_letter(db, destination="warehouse", http_status=None, error_class="ConnectTimeout")["id"] for _ in range(2)]
    with pytest.raises(ValueError):
        service.act_on_group(db, action="discard", destination="warehouse", ids=ids, actor="marta", signature=None, note="  ")
    result = service.act_on_group(
        db,
        action="discard",
        destination="warehouse",
        ids=ids,
        actor="marta",
        signature="warehouse:ConnectTimeout",
        note="pedido anulado",
    )
    assert sorted(result.touched) == sorted(ids)
    assert [r["details"]["reason"] for r in audit_rows(db, "dead_letter.discarded")] == ["pedido anulado"] * 2


def test_groups_count_pending_by_destination_and_signature(db):
    for _ in range(3):
        make_dead_letter(db, http_status=422)
    make_dead_letter(db, http_status=503)
    resolved = make_dead_letter(db, http_status=503)["id"]
    service.replay(db, resolved, "marta")
    make_dead_letter(db, destination="warehouse", http_status=None, error_class="ReadTimeout")
    counts = {(g["destination"], g["error_signature"]): g["total"] for g in service.group_counts(db, ("fiscal", "warehouse"))}
    assert counts == {("fiscal", "fiscal:422"): 3, ("fiscal", "fiscal:503"): 1, ("warehouse", "warehouse:ReadTimeout"): 1}
    assert [g["destination"] for g in service.group_counts(db, ("warehouse",))] == ["warehouse"]


def test_list_is_scoped_newest_first_and_capped(db, monkeypatch):
    ids = [make_dead_letter(db)["id"] for _ in range(4)]
    make_dead_letter(db, destination="warehouse")
    page = service.list_dead_letters(db, queries.ListFilter(destinations=("fiscal",)), page=1, size=10)
    assert [r["id"] for r in page.rows] == list(reversed(ids)) and page.total == 4 and not page.truncated
    assert "payload" not in page.rows[0]
    monkeypatch.setattr(service, "CANDIDATE_CAP", 3)
    capped = service.list_dead_letters(db, queries.ListFilter(destinations=("fiscal",)), page=1, size=10)
    assert (capped.total, capped.truncated, len(capped.rows)) == (3, True, 3)
    exact = service.list_dead_letters(db, queries.ListFilter(destinations=("fiscal",), ids=tuple(ids[:3])), page=1, size=10)
    assert (exact.total, exact.truncated) == (3, False)  # exactly the cap is not "truncated"


class _Destination(BaseHTTPRequestHandler):
    """A destination whose lookup route records whether Nexo held a transaction open while asking."""

    database_url = ""
    seen: list = []
    status = 200

    def do_GET(self):  # noqa: N802 (http.server's naming)
        with psycopg.connect(self.database_url, autocommit=True) as conn:
            open_tx = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid()"
            ).fetchone()[0]
        type(self).seen.append((self.path, open_tx))
        body = b'{"invoice_number": "A-0001"}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def destination(settings):
    _Destination.database_url, _Destination.seen, _Destination.status = settings.database_url, [], 200
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Destination)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_key_check_asks_with_no_transaction_open_and_audits_the_answer(db, settings, destination):
    made = make_dead_letter(db)
    answer = keycheck.check_key(db, dataclasses.replace(settings, fiscal_url=destination), made["id"], "marta")
    assert answer.answer == "applied" and "A-0001" in answer.detail
    assert _Destination.seen == [(f"/invoices/{made['event_id']}", 0)]
    [audited] = audit_rows(db, "dead_letter.key_checked", made["id"])
    assert audited["actor"] == "marta" and audited["details"]["answer"] == "applied"


def test_key_check_maps_404_and_unreachable_destinations(db, settings, destination):
    made = make_dead_letter(db, destination="warehouse")
    _Destination.status = 404
    answer = keycheck.check_key(db, dataclasses.replace(settings, warehouse_url=destination), made["id"], "marta")
    assert (answer.answer, _Destination.seen[0][0]) == ("not_applied", f"/handoffs/{made['event_id']}")
    down = keycheck.check_key(db, dataclasses.replace(settings, warehouse_url="http://127.0.0.1:9"), made["id"], "marta")
    assert down.answer == "unknown"
    unset = keycheck.check_key(db, dataclasses.replace(settings, warehouse_url=None), made["id"], "marta")
    assert unset.answer == "unknown"
    assert [r["details"]["answer"] for r in audit_rows(db, "dead_letter.key_checked")] == ["not_applied", "unknown", "unknown"]
    assert keycheck.check_key(db, settings, 999_999, "marta") is None


class _Dribbling(BaseHTTPRequestHandler):
    """A lookup route that answers 200 and then sends its body one byte every 0.2 s (for up to 10 s)."""

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "50")
        self.end_headers()
        for _ in range(50):
            try:
                self.wfile.write(b" ")
                self.wfile.flush()
            except OSError:
                return  # Nexo gave up and closed the connection
            time.sleep(0.2)

    def log_message(self, *args):
        pass


def test_key_check_ends_within_its_deadline_whatever_the_destination_does(db, settings):
    """Each byte arrives in time, the whole answer does not: the question ends at the deadline (ADR-014)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Dribbling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    made = make_dead_letter(db)
    quick = dataclasses.replace(
        settings,
        fiscal_url=f"http://127.0.0.1:{server.server_port}",
        relay=dataclasses.replace(settings.relay, delivery_timeout_s=1.0),
    )
    try:
        started = time.monotonic()
        answer = keycheck.check_key(db, quick, made["id"], "marta")
        lasted = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert answer.answer == "unknown" and "1 s" in answer.detail
    assert lasted < 3, f"the key check took {lasted:.1f} s"
