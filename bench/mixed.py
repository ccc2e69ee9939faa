"""Mixed phase (ADR-011): HTTP orders at a rising rate against the whole system as `make run` starts it.

Web (gunicorn), two relay workers, the sweeper and both fakes share the cores with Postgres, Redis and
this load generator. Each step posts the order form open-loop at a fixed rate (a slow answer does not
delay the next order; latency counts from the moment the order was due, so a generator that falls
behind shows it) while a sampler reads the age of the oldest PENDIENTE event five times a second. A
step is sustained when every POST got its 303, the rate was reached, and the oldest PENDIENTE event
stayed under a second; the phase stops at the first step that is not.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter

import redis

from bench import data as bench_data
from bench.cpu import CpuMeter
from bench.load import percentile
from bench.web import log_in_all

RELAY_WORKERS = 2  # make run's (RELAY_WORKERS' default)
SENDERS = 32  # generator threads, each with its own keep-alive connection
MAX_PENDING_AGE_S = 1.0  # the mixed target: "the oldest PENDIENTE event stays under 1 s"
# The parts of an order POST's time (ms), in the order they happen: the generator late in sending it, the
# wait for a gunicorn thread (Server-Timing queue), for a database connection (pool), the transactions
# (tx, lock waits included), the rest of the handler (python), and what lies outside it (wire: parsing,
# writing, the client reading). Each is read per POST (SERVER_TIMING=on for this phase's gunicorn).
PARTS = ("late", "queue", "pool", "tx", "python", "wire")
_TIMING = re.compile(r"(\w+);dur=([\d.]+)")
OLDEST_PENDING = (
    "SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float AS age FROM outbox_event WHERE status = 'PENDIENTE'"
)


# What Postgres's sessions are doing inside a transaction (the `tx` part split further): running or
# waiting for a core (no wait event), waiting for their client (idle in transaction: the round trip and
# the Python between statements), for a lock on a hot row, or for the WAL and the disk.
SESSIONS = """
SELECT CASE WHEN state = 'idle in transaction' THEN 'client'
            WHEN wait_event_type IS NULL THEN 'running'
            WHEN wait_event_type = 'Lock' THEN 'lock:' || wait_event
            WHEN wait_event_type IN ('IO', 'LWLock') THEN lower(wait_event_type) || ':' || wait_event
            ELSE lower(wait_event_type) || ':' || wait_event END AS doing,
       count(*) AS n
  FROM pg_stat_activity
 WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
   AND (state = 'idle in transaction' OR (state = 'active' AND xact_start IS NOT NULL))
 GROUP BY 1
"""
SESSIONS_EVERY_S = 0.05


class _Watch:
    """The step's two samplers: the oldest PENDIENTE's age (until stopped, so the backlog drains into it) and
    what the sessions in a transaction do (only while orders are sent)."""

    def __init__(self, db):
        self.db = db
        self.ages: list[float] = []
        self.seen: Counter = Counter()
        self.samples = 0
        self.sending_done, self.done = threading.Event(), threading.Event()
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self._pending, self._sessions)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def orders_sent(self) -> None:
        self.sending_done.set()

    def stop(self) -> None:
        self.sending_done.set()
        self.done.set()
        for thread in self.threads:
            thread.join()

    def _pending(self) -> None:
        while not self.done.wait(0.2):
            with self.db.reading() as conn:
                self.ages.append(conn.execute(OLDEST_PENDING).fetchone()["age"])

    def _sessions(self) -> None:
        with self.db.reading_one() as conn:
            while not self.sending_done.wait(SESSIONS_EVERY_S):
                for row in conn.execute(SESSIONS):
                    self.seen[row["doing"]] += row["n"]
                self.samples += 1


def sessions_summary(seen: Counter, samples: int, top: int = 6) -> dict | None:
    """Sessions in a transaction on average, and each activity's share of them (the `top` largest, the rest summed)."""
    total = sum(seen.values())
    if not samples or not total:
        return None
    shares = {doing: round(100 * n / total, 1) for doing, n in seen.most_common(top)}
    rest = round(100 - sum(shares.values()), 1)
    if rest > 0.05:
        shares["other"] = rest
    return {"in_transaction_avg": round(total / samples, 2), "share_pct": shares}


def _step(tabs, data, db, rate: float, seconds: float, meter: CpuMeter) -> dict:
    count = int(rate * seconds)
    lock, nxt = threading.Lock(), [0]
    latencies: list[float] = []
    splits: list[dict[str, float]] = []
    errors: list[str] = []

    def send(person, rng_seed: int) -> None:
        import random

        rng = random.Random(rng_seed)
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= count:
                return
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            sent = time.perf_counter()
            try:
                status, _ = person.post_order(rng.choice(data.client_ids), data.order_lines(rng), stamped=True)
                error = None if status == 303 else f"HTTP {status}"
            except Exception as exc:  # a failed request is a measured error
                error = f"{type(exc).__name__}: {exc}"[:120]
            answered = time.perf_counter()
            with lock:
                if error:
                    errors.append(error)
                else:
                    latencies.append(answered - due)
                    splits.append(_split(person.timing, due, sent, answered))

    watch = _Watch(db)
    meter.start()
    start = time.perf_counter() + 0.05
    watch.start()
    threads = [threading.Thread(target=send, args=(tabs[i], i * 31 + int(rate)), daemon=True) for i in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    took = time.perf_counter() - start
    cpu = meter.per_op(count)
    watch.orders_sent()
    ages = watch.ages
    # The events of the step's last orders: wait until they are delivered (or the backlog is obvious).
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (not ages or ages[-1] > 0):
        time.sleep(0.2)
    watch.stop()
    ms = [x * 1000 for x in latencies]
    worst_age = max(ages) if ages else None
    achieved = len(latencies) / took if took else 0.0
    return {
        "rate": rate,
        "seconds": seconds,
        "orders": count,
        "ok": len(latencies),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:3],
        "achieved_per_s": round(achieved, 1),
        "p50_ms": _round(percentile(ms, 50)),
        "p99_ms": _round(percentile(ms, 99)),
        "oldest_pending_max_s": None if worst_age is None else round(worst_age, 3),
        **tail_parts(ms, splits),
        "sessions": sessions_summary(watch.seen, watch.samples),
        "cpu_ms_per_order": cpu,
        "sustained": not errors and achieved >= 0.95 * rate and worst_age is not None and worst_age < MAX_PENDING_AGE_S,
    }


def _split(timing: str, due: float, sent: float, answered: float) -> dict[str, float]:
    """One POST's time in PARTS (ms), from its Server-Timing header and the generator's own clocks."""
    server = {name: float(value) for name, value in _TIMING.findall(timing)}
    total = (answered - sent) * 1000
    app = server.get("app", 0.0)
    parts = {"late": (sent - due) * 1000, "queue": server.get("queue", 0.0), "pool": server.get("pool", 0.0)}
    parts["tx"] = server.get("tx", 0.0)
    parts["python"] = max(0.0, app - parts["pool"] - parts["tx"])
    parts["wire"] = max(0.0, total - parts["queue"] - app)
    return parts


def tail_parts(ms: list[float], splits: list[dict[str, float]]) -> dict:
    """p99 of each part on its own, and what the slowest 1 % of POSTs (by total) spent on each, on average."""
    if not splits:
        return {"p99_ms_by_part": None, "slowest_1pct_ms_by_part": None}
    worst = sorted(range(len(ms)), key=ms.__getitem__)[-max(1, len(ms) // 100) :]
    return {
        "p99_ms_by_part": {part: _round(percentile([s[part] for s in splits], 99)) for part in PARTS},
        "slowest_1pct_ms_by_part": {part: _round(sum(splits[i][part] for i in worst) / len(worst)) for part in PARTS},
    }


def _round(value):
    return None if value is None else round(value, 1)


def run(run) -> dict:
    """The rising-rate steps against web + workers + sweeper + fakes; stops at the first unsustained step."""
    stack, db, data, scale = run.stack, run.db, run.data, run.scale
    connection = redis.Redis.from_url(stack.env["REDIS_URL"])
    bench_data.reset_relay(db, connection)
    if not stack.fakes:
        stack.start_fakes()
    url = stack.start_web(SERVER_TIMING="on")
    procs = stack.start_workers(RELAY_WORKERS) + [stack.start("sweeper")]
    people = log_in_all(url, data.usernames[:8], data.password)
    tabs = [people[i % len(people)].another_tab() for i in range(SENDERS)]
    trees = {"gunicorn": [stack.web.pid], "relay": [p.pid for p in procs], "fakes": [p.pid for p in stack.fakes]}
    steps = []
    try:
        for rate in scale.mixed_rates:
            print(f"[bench] (7) mixed: HTTP orders at {rate:g}/s for {scale.mixed_step_s:g} s, relay as make run", flush=True)
            meter = CpuMeter(run.database_url, run.redis_url, trees, include_self="load generator")
            step = _step(tabs, data, db, rate, scale.mixed_step_s, meter)
            steps.append(step)
            if not step["sustained"]:
                break
    finally:
        for proc in procs:
            stack.stop(proc)
        stack.stop(stack.web)
    sustained = [s for s in steps if s["sustained"]]
    best = sustained[-1] if sustained else None
    return {
        "relay_workers": RELAY_WORKERS,
        "senders": SENDERS,
        "steps": steps,
        "highest_sustained_rate": best and best["rate"],
        "p99_ms_at_highest": best and best["p99_ms"],
    }


def table(mixed: dict) -> list[str]:
    """The mixed phase's lines of the printed table."""
    lines = [
        f"(7) mixed: HTTP orders at a rising rate, web + {mixed['relay_workers']} relay workers + sweeper + fakes"
        " (make run's shape), oldest PENDIENTE sampled every 0.2 s",
        "    rate/s  achieved/s   p50 ms   p99 ms  errors  oldest PENDIENTE max s  sustained"
        "   CPU ms/order: gunicorn · relay · fakes · postgres · redis · load generator",
    ]
    for s in mixed["steps"]:
        cpu = s["cpu_ms_per_order"]
        parts = " · ".join(f"{cpu.get(k, 0):.1f}" for k in ("gunicorn", "relay", "fakes", "postgres", "redis", "load generator"))
        lines.append(
            f"    {s['rate']:>6g} {s['achieved_per_s']:>11} {s['p50_ms']!s:>8} {s['p99_ms']!s:>8}"
            f" {s['errors']:>7} {s['oldest_pending_max_s']!s:>22}  {'yes' if s['sustained'] else 'NO':>9}   {parts}"
        )
    lines += [
        "    where a POST's time goes (ms): late = the generator behind, queue = waiting for a gunicorn thread,",
        "    pool = for a database connection, tx = the transactions (lock waits included), python = the rest of",
        "    the handler, wire = outside it; p99 of each part on its own · mean of each over the slowest 1 %",
        "    rate/s  " + "".join(f"{part:>15}" for part in PARTS),
    ]
    for s in mixed["steps"]:
        p99, slowest = s.get("p99_ms_by_part"), s.get("slowest_1pct_ms_by_part")
        if p99 and slowest:
            lines.append(f"    {s['rate']:>6g}  " + "".join(f"{f'{p99[k]} · {slowest[k]}':>15}" for k in PARTS))
    lines.append(
        "    Postgres's sessions inside a transaction, sampled every 50 ms while orders are sent: how many on"
        " average, and what they do (running = on a core or waiting for one; client = waiting for Nexo"
        " between statements; lock:, lwlock:, io: = waiting for a row, an internal lock, the disk or the WAL)"
    )
    for s in mixed["steps"]:
        summary = s.get("sessions")
        if summary:
            shares = " · ".join(f"{doing} {pct} %" for doing, pct in summary["share_pct"].items())
            lines.append(f"    {s['rate']:>6g}  {summary['in_transaction_avg']:>5} sessions: {shares}")
    best = mixed["highest_sustained_rate"]
    lines.append(
        f"    highest sustained rate: {best if best is not None else 'none'} orders/s"
        + (f", POST p99 {mixed['p99_ms_at_highest']} ms" if best is not None else "")
    )
    return lines + [""]
