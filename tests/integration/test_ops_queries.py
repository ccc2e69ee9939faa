"""The SQL behind the signals, exactly, on a private REPEATABLE READ snapshot that is rolled back.

A snapshot, because other processes of the suite (the session's gunicorn) may still be flushing
order-transaction samples; this test must see only the rows it wrote.
"""

from __future__ import annotations

import random
import uuid

import psycopg
import pytest
from psycopg.rows import dict_row

from nexo.ops import queries
from nexo.outbox.registry import NAMES


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
    conn.execute(
        "INSERT INTO order_transaction_sample (occurred_at, seconds, outcome) VALUES (now() - %s::interval, %s, %s)",
        [ago, seconds, outcome],
    )


def test_percentiles_per_window(snapshot):
    for ms in range(10, 101, 10):
        _sample(snapshot, "30 minutes", ms / 1000)
    _sample(snapshot, "5 hours", 2.0, "pending_authorization")  # only in the 24-hour window
    _sample(snapshot, "25 hours", 9.0)  # in neither
    stats = queries.order_transaction_stats(snapshot)
    assert stats["1h"]["count"] == 10
    assert stats["1h"]["p50"] == pytest.approx(0.055) and stats["1h"]["p95"] == pytest.approx(0.0955)
    assert stats["24h"]["count"] == 11
    assert stats["24h"]["p50"] == pytest.approx(0.06) and stats["24h"]["p95"] == pytest.approx(1.05)
    assert [(o["outcome"], o["count"]) for o in queries.order_transaction_outcomes(snapshot)] == [
        ("confirmed", 10),
        ("pending_authorization", 1),
    ]


def test_no_sample_means_no_percentile_not_zero(snapshot):
    stats = queries.order_transaction_stats(snapshot)
    assert stats["1h"] == {"count": 0, "p50": None, "p95": None}
    assert queries.order_transaction_p95_per_hour(snapshot) == [None] * 24


def test_hourly_series_count_back_from_now(snapshot):
    for ago in ("10 minutes", "50 minutes", "90 minutes", "23 hours 30 minutes", "25 hours"):
        snapshot.execute(
            "INSERT INTO ops_signal_event (kind, occurred_at) VALUES ('request_id_reused', now() - %s::interval)", [ago]
        )
        _sample(snapshot, ago, 0.01)
    series = queries.conflicts_per_hour(snapshot)
    assert series[23] == 2 and series[22] == 1 and series[0] == 1 and sum(series) == 4
    p95 = queries.order_transaction_p95_per_hour(snapshot)
    assert p95[23] == pytest.approx(0.01) and p95[21] is None


def test_pending_age_history_follows_delivery_failure_replay_and_discard(snapshot):
    conn = snapshot
    order_id = uuid.uuid4()
    conn.execute(
        """
        INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents)
        SELECT %s, c.id, 'CEN', u.id, 'CONFIRMADO', 100 FROM client c, app_user u
         WHERE c.name = 'Corralón del Sur' AND u.username = 'vendedor1'""",
        [order_id],
    )

    def event(destination, created_ago, status, delivered_ago=None):
        event_id = uuid.uuid4()
        event_type = {"fiscal": "billing.intent_recorded", "warehouse": "order.handoff_requested"}[destination]
        conn.execute(
            """
            INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, created_at, delivered_at)
            VALUES (%s, %s, %s, %s, '{}', %s, now() - %s::interval, now() - %s::interval)""",
            [event_id, order_id, event_type, destination, status, created_ago, delivered_ago],
        )
        return event_id

    def dead_letter(event_id, destination, opened_ago, status="pending", resolved_ago=None):
        conn.execute(
            """
            INSERT INTO dead_letter (event_id, destination, status, attempts, error_signature, first_failed_at,
                                     last_failed_at, created_at, resolved_at)
            VALUES (%s, %s, %s, 8, 'x', now(), now(), now() - %s::interval, now() - %s::interval)""",
            [event_id, destination, status, opened_ago, resolved_ago],
        )

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
    assert ago[7]["fiscal"] == pytest.approx(3600)  # the new fiscal event, 1 h old
    assert ago[5]["fiscal"] == 0  # failed: waiting for a person, not pending
    assert ago[2]["fiscal"] == pytest.approx(6 * 3600)  # replayed 3 h ago: pending again
    assert ago[0]["fiscal"] == pytest.approx(8 * 3600)
    assert ago[19]["fiscal"] == 0 and ago[20]["fiscal"] == 0  # the discarded one, after it failed


# The definition of the chart, as first written: every unsettled event and every event delivered in
# the window, each checked at every mark. pending_age_history reads far fewer rows and
# must answer exactly the same.
_REFERENCE_HISTORY = """
    WITH marks AS (SELECT k, now() - k * interval '1 hour' AS t FROM generate_series(0, 24) AS k),
         candidates AS (
             SELECT id, destination, created_at, delivered_at FROM outbox_event WHERE status <> 'ENTREGADO'
             UNION ALL
             SELECT id, destination, created_at, delivered_at FROM outbox_event
              WHERE status = 'ENTREGADO' AND delivered_at > now() - interval '24 hours')
    SELECT m.k, c.destination, extract(epoch FROM max(m.t - c.created_at))::float AS age_s
      FROM marks m
      JOIN candidates c ON c.created_at <= m.t AND (c.delivered_at IS NULL OR c.delivered_at > m.t)
     WHERE NOT EXISTS (SELECT 1 FROM dead_letter d
                        WHERE d.event_id = c.id AND d.created_at <= m.t
                          AND (d.status = 'discarded' OR d.resolved_at IS NULL OR d.resolved_at > m.t))
     GROUP BY m.k, c.destination"""


def test_pending_age_history_matches_its_definition_on_mixed_outboxes(snapshot):
    conn = snapshot
    order_id = uuid.uuid4()
    conn.execute(
        """
        INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents)
        SELECT %s, c.id, 'CEN', u.id, 'CONFIRMADO', 100 FROM client c, app_user u
         WHERE c.name = 'Corralón del Sur' AND u.username = 'vendedor1'""",
        [order_id],
    )
    for seed in range(40):  # small outboxes, so no single old event hides every other case
        conn.execute("DELETE FROM dead_letter")
        conn.execute("DELETE FROM outbox_event")
        _random_outbox(conn, random.Random(seed), order_id, events=8)
        expected = {d: [0.0] * 25 for d in NAMES}
        for row in conn.execute(_REFERENCE_HISTORY).fetchall():
            expected[row["destination"]][24 - row["k"]] = row["age_s"]
        history = queries.pending_age_history(conn)
        for destination in NAMES:
            assert history[destination] == pytest.approx(expected[destination]), f"seed {seed}, {destination}"


def _random_outbox(conn, rng: random.Random, order_id, events: int) -> None:
    for _ in range(events):
        destination = rng.choice(["fiscal", "warehouse"])
        created = rng.uniform(0.1, 36)  # hours ago, some before the window
        status = rng.choice(["PENDIENTE", "ENTREGADO", "ENTREGADO", "FALLIDO", "FALLIDO"])
        delivered = rng.uniform(0, created) if status == "ENTREGADO" else None
        event_id = uuid.uuid4()
        conn.execute(
            """
            INSERT INTO outbox_event (id, aggregate_id, event_type, destination, payload, status, created_at,
                                      delivered_at)
            VALUES (%s, %s, %s, %s, '{}', %s, now() - make_interval(secs => %s * 3600),
                    now() - make_interval(secs => %s * 3600))""",
            [
                event_id,
                order_id,
                {"fiscal": "billing.intent_recorded", "warehouse": "order.handoff_requested"}[destination],
                destination,
                status,
                created,
                delivered,
            ],
        )
        # FALLIDO: its latest dead letter is pending or discarded; any event may have had resolved ones.
        letters = 1 if status == "FALLIDO" else rng.choice([0, 0, 1, 2])
        if status == "FALLIDO":
            letters += rng.choice([0, 1])
        opened = created
        for n in range(letters):
            opened = rng.uniform(0, opened)
            last = n == letters - 1
            state = rng.choice(["pending", "discarded"]) if status == "FALLIDO" and last else "resolved"
            resolved = None if state == "pending" else rng.uniform(0, opened)
            conn.execute(
                """
                INSERT INTO dead_letter (event_id, destination, status, attempts, error_signature, first_failed_at,
                                         last_failed_at, created_at, resolved_at)
                VALUES (%s, %s, %s, 8, 'x', now(), now(), now() - make_interval(secs => %s * 3600),
                        now() - make_interval(secs => %s * 3600))""",
                [event_id, destination, state, opened, resolved],
            )
            opened = resolved if resolved is not None else opened
