"""The SQL behind the signals, exactly, on a private REPEATABLE READ snapshot that is rolled back.

A snapshot, because other processes of the suite (the session's gunicorn) may still be flushing
order-transaction samples; this test must see only the rows it wrote.
"""

from __future__ import annotations

import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from nexo.ops import queries


@pytest.fixture
def snapshot(settings):
    conn = psycopg.connect(settings.database_url, row_factory=dict_row)
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    conn.execute("DELETE FROM order_transaction_sample")
    conn.execute("DELETE FROM ops_signal_event")
    yield conn
    conn.rollback()
    conn.close()


def _sample(conn, ago: str, seconds: float, outcome: str = "confirmed"):
    conn.execute("INSERT INTO order_transaction_sample (occurred_at, seconds, outcome)"
                 " VALUES (now() - %s::interval, %s, %s)", [ago, seconds, outcome])


def test_percentiles_per_window(snapshot):
    for ms in range(10, 101, 10):
        _sample(snapshot, "30 minutes", ms / 1000)
    _sample(snapshot, "5 hours", 2.0, "pending_authorization")       # only in the 24-hour window
    _sample(snapshot, "25 hours", 9.0)                               # in neither
    stats = queries.order_transaction_stats(snapshot)
    assert stats["1h"]["count"] == 10
    assert stats["1h"]["p50"] == pytest.approx(0.055) and stats["1h"]["p95"] == pytest.approx(0.0955)
    assert stats["24h"]["count"] == 11
    assert stats["24h"]["p50"] == pytest.approx(0.06) and stats["24h"]["p95"] == pytest.approx(1.05)
    assert [(o["outcome"], o["count"]) for o in queries.order_transaction_outcomes(snapshot)] == [
        ("confirmed", 10), ("pending_authorization", 1)]


def test_no_sample_means_no_percentile_not_zero(snapshot):
    stats = queries.order_transaction_stats(snapshot)
    assert stats["1h"] == {"count": 0, "p50": None, "p95": None}
    assert queries.order_transaction_p95_per_hour(snapshot) == [None] * 24


def test_hourly_series_count_back_from_now(snapshot):
    for ago in ("10 minutes", "50 minutes", "90 minutes", "23 hours 30 minutes", "25 hours"):
        snapshot.execute("INSERT INTO ops_signal_event (kind, occurred_at) VALUES ('request_id_reused', now() - %s::interval)",
                         [ago])
        _sample(snapshot, ago, 0.01)
    series = queries.conflicts_per_hour(snapshot)
    assert series[23] == 2 and series[22] == 1 and series[0] == 1 and sum(series) == 4
    p95 = queries.order_transaction_p95_per_hour(snapshot)
    assert p95[23] == pytest.approx(0.01) and p95[21] is None


def test_pending_age_history_follows_delivery_failure_replay_and_discard(snapshot):
    conn = snapshot
    order_id = uuid.uuid4()
    conn.execute("""
        INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents)
        SELECT %s, c.id, 'CEN', u.id, 'CONFIRMADO', 100 FROM client c, app_user u
         WHERE c.name = 'Corralón del Sur' AND u.username = 'vendedor1'""", [order_id])

    def event(destination, created_ago, status, delivered_ago=None):
        event_id = uuid.uuid4()
        event_type = {"fiscal": "billing.intent_recorded", "warehouse": "order.handoff_requested"}[destination]
        conn.execute("""
            INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, created_at, delivered_at)
            VALUES (%s, %s, %s, %s, '{}', %s, now() - %s::interval, now() - %s::interval)""",
                     [event_id, order_id, event_type, destination, status, created_ago, delivered_ago])
        return event_id

    def dead_letter(event_id, destination, opened_ago, status="pending", resolved_ago=None):
        conn.execute("""
            INSERT INTO dead_letter (event_id, destination, status, attempts, error_signature, first_failed_at,
                                     last_failed_at, created_at, resolved_at)
            VALUES (%s, %s, %s, 8, 'x', now(), now(), now() - %s::interval, now() - %s::interval)""",
                     [event_id, destination, status, opened_ago, resolved_ago])

    # warehouse: created 10 h ago, delivered 4 h ago → pending from -10 h to -4 h
    event("warehouse", "10 hours", "ENTREGADO", "4 hours")
    # fiscal: created 8 h ago, FALLIDO 6 h ago, replayed 3 h ago, still pending now
    replayed = event("fiscal", "8 hours", "PENDIENTE")
    dead_letter(replayed, "fiscal", "6 hours", "resolved", "3 hours")
    # fiscal: created 20 h ago, FALLIDO 19 h ago and discarded: never pending again
    discarded = event("fiscal", "20 hours", "FALLIDO")
    dead_letter(discarded, "fiscal", "19 hours", "discarded", "18 hours")

    history = queries.pending_age_history(conn)
    ago = {hours: {d: history[d][24 - hours] for d in history} for hours in range(25)}
    assert ago[5]["warehouse"] == pytest.approx(5 * 3600) and ago[3]["warehouse"] == 0
    assert ago[7]["fiscal"] == pytest.approx(3600)                   # the new fiscal event, 1 h old
    assert ago[5]["fiscal"] == 0                                     # failed: waiting for a person, not pending
    assert ago[2]["fiscal"] == pytest.approx(6 * 3600)               # replayed 3 h ago: pending again
    assert ago[0]["fiscal"] == pytest.approx(8 * 3600)
    assert ago[19]["fiscal"] == 0 and ago[20]["fiscal"] == 0         # the discarded one, after it failed
