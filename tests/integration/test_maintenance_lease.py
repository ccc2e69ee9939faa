"""Exactly one maintenance runner at a time across hosts, and hosts gone for good leave /metrics (ADR-019)."""

from __future__ import annotations

import dataclasses
import threading

from nexo.maintenance import BACKUP_FIRST_ROUND_AFTER_S, BACKUP_ROUND_EVERY_S, LEASE, MaintenanceRunner
from nexo.ops import exposition
from nexo.processes import repository as processes


def _holder_of(conn, name: str) -> str | None:
    """Who holds the lease now (None when nobody does, or it expired)."""
    row = conn.execute("SELECT holder FROM leader_lease WHERE name = %s AND expires_at >= now()", [name]).fetchone()
    return None if row is None else row["holder"]


def _runner(db, settings, host: str, **kwargs) -> MaintenanceRunner:
    fleet = dataclasses.replace(settings.fleet, host_id=host)
    return MaintenanceRunner(db, dataclasses.replace(settings, fleet=fleet), retention_every_s=86400, **kwargs)


def test_of_runners_on_several_hosts_one_leads_and_the_others_stand_by(db, settings):
    runners = [_runner(db, settings, f"host-{i}") for i in range(4)]
    barrier = threading.Barrier(len(runners))
    led: dict[str, bool] = {}

    def tick(runner: MaintenanceRunner) -> None:
        barrier.wait()
        led[runner.holder] = runner.tick()

    threads = [threading.Thread(target=tick, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sum(led.values()) == 1, led
    leader = next(r for r in runners if r.leader)
    # Renewing keeps it; the others still stand by.
    assert leader.tick() and not any(r.tick() for r in runners if r is not leader)


def test_a_leader_gone_silent_is_replaced_once_its_lease_expires(db, settings):
    first, second = _runner(db, settings, "a", ttl_s=1), _runner(db, settings, "b", ttl_s=1)
    assert first.tick()
    assert not second.tick()
    with db.transaction() as tx:  # the first host dies: nobody renews, the lease runs out
        tx.execute("UPDATE leader_lease SET expires_at = now() - interval '1 second' WHERE name = %s", [LEASE])
        tx.commit()
    assert second.tick()
    assert not first.tick()  # back from the dead, it finds the lease taken and stands by
    with db.reading() as conn:
        assert _holder_of(conn, LEASE) == second.holder


def test_a_clean_stop_hands_the_lease_over_at_once(db, settings):
    first, second = _runner(db, settings, "a"), _runner(db, settings, "b")
    assert first.tick()
    stop = threading.Event()
    stop.set()
    first.run_forever(stop)  # already asked to stop: releases
    assert second.tick()


def test_a_host_unseen_for_the_expiry_leaves_metrics_and_is_purged(db, settings):
    with db.transaction() as tx:
        processes.insert_event(tx.conn, "gone-host", "worker_0", "fatal", None, "supervisor gave up")
        processes.insert_event(tx.conn, "live-host", "worker_0", "running", 12)
        tx.execute("UPDATE process_event SET occurred_at = now() - interval '2 hours' WHERE host = 'gone-host'")
        processes.mark_host_seen(tx.conn, "live-host")
        tx.commit()
    metrics = exposition.render(db, None, host_expiry_s=3600).decode()
    assert 'host="live-host"' in metrics
    assert 'host="gone-host"' not in metrics  # NexoProcessFatal does not page for a host gone for good
    assert 'host="gone-host"' in exposition.render(db, None, host_expiry_s=3 * 3600).decode()
    counts = _runner(db, dataclasses.replace(settings, fleet=dataclasses.replace(settings.fleet, host_expiry_s=3600)), "m")
    assert counts.housekeeping()["gone_hosts_events"] == 1
    with db.reading() as conn:
        assert {r["host"] for r in conn.execute("SELECT host FROM process_event").fetchall()} == {"live-host"}


def test_one_sweeper_across_hosts_reads_the_wake_up_queue_the_others_stand_by(db, settings, redis_client):
    from nexo.outbox import relay, sweeper, wakeup

    contexts = [relay.build_context(settings, f"sweeper-{i}") for i in range(3)]
    try:
        ring = wakeup.Wakeup(redis_client, settings)
        results = [sweeper.sweep_or_stand_by(ctx, ring) for ctx in contexts]
        assert [r is not None for r in results] == [True, False, False]
        with db.transaction() as tx:  # its host goes silent: the lease runs out
            tx.execute("UPDATE leader_lease SET expires_at = now() - interval '1 second' WHERE name = %s", [sweeper.SCAN_LEASE])
            tx.commit()
        assert sweeper.sweep_or_stand_by(contexts[2], ring) is not None
        assert sweeper.sweep_or_stand_by(contexts[0], ring) is None
    finally:
        for ctx in contexts:
            ctx.close()


def test_a_worker_host_exports_its_own_relay_counters(db, fakes, relay, tmp_path):
    import requests

    from tests.helpers import free_port
    from tests.relay_support import insert_confirmed_orders, wait_until

    port, shared = free_port(), tmp_path / "prometheus"
    shared.mkdir()
    env = {"RELAY_METRICS_PORT": str(port), "PROMETHEUS_MULTIPROC_DIR": str(shared)}
    relay.start_workers(2, **env)  # two processes of one host: one serves, both count
    relay.start_sweepers(1, **env)
    insert_confirmed_orders(db, 3)

    def exported() -> str | None:
        try:
            text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
        except requests.RequestException:
            return None
        wanted = [f'nexo_relay_attempts_total{{destination="{d}",outcome="ENTREGADO"}} 3.0' for d in ("fiscal", "warehouse")]
        return text if all(line in text for line in wanted) else None

    # Both destinations' attempts, counted by whichever of the three processes recorded them, on one port.
    wait_until(exported, timeout=60, message="the host's relay counters on RELAY_METRICS_PORT")


def test_the_backup_round_waits_for_the_start_to_be_over_then_runs_hourly(db, settings, monkeypatch):
    now = [1000.0]
    runner = _runner(db, settings, "backup-host", clock=lambda: now[0])
    rounds: list[float] = []
    monkeypatch.setattr(runner, "start_backup_round", lambda: rounds.append(now[0]))
    assert runner.tick() and rounds == []  # just took the lease: the start is busy enough
    now[0] += BACKUP_FIRST_ROUND_AFTER_S
    runner.tick()
    now[0] += 60
    runner.tick()
    now[0] += BACKUP_ROUND_EVERY_S
    runner.tick()
    assert rounds == [1000.0 + BACKUP_FIRST_ROUND_AFTER_S, 1000.0 + BACKUP_FIRST_ROUND_AFTER_S + 60 + BACKUP_ROUND_EVERY_S]
    runner.release()
