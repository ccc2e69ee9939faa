"""What the machine's cores allow each path, from the run's own CPU per unit of work (ADR-011).

Every phase that loads the cores measures the CPU each process spent per unit (an order, an event): Nexo's
own, Postgres's, Redis's, the fakes' and the load generator's, all on the same cores. Their sum is what one
unit costs the machine, so no schedule of the work can go faster than cores ÷ that sum. Printed next to the
round 3 goals, it tells two kinds of shortfall apart: a path far below its bound waits on something (a lock,
a round trip, a queue) and can go faster as it is; a path near its bound can only go faster by spending less
CPU per unit, and the last column says how much less its goal needs.
"""

from __future__ import annotations

# The goals of round 3 (docs/performance.md), as rates: a share of a floor or a rate of its own.
DIRECT_OF_FLOOR = 0.70
HTTP_OF_FLOOR = 0.35
RELAY_OF_FLOOR = 0.50
MIXED_RATE = 350


def bounds(results: dict) -> list[dict]:
    """One row per path that ran: its CPU per unit (every process), the rate the cores allow, the rate
    measured and its share of that bound, and the rate and CPU per unit its goal needs (None: not run)."""
    cores = (results.get("machine") or {}).get("cores")
    if not cores:
        return []
    order_floor = (results.get("order_floor") or {}).get("orders_per_s")
    delivery_floor = (results.get("delivery_floor") or {}).get("events_per_s")
    direct8 = _row(results.get("direct"), "concurrency", 8)
    http8 = _row(results.get("http"), "concurrency", 8)
    relay2 = _row(results.get("relay_throughput"), "workers", 2)
    mixed = results.get("mixed") or {}
    top = _row(mixed.get("steps"), "rate", mixed.get("highest_sustained_rate"))
    paths = [
        ("direct create_order @8", "orders/s", direct8, "per_s", "cpu_ms_per_op", order_floor and DIRECT_OF_FLOOR * order_floor),
        ("HTTP form @8", "orders/s", http8, "per_s", "cpu_ms_per_op", order_floor and HTTP_OF_FLOOR * order_floor),
        (
            "relay, 2 workers",
            "events/s",
            relay2,
            "events_per_s",
            "cpu_ms_per_event",
            delivery_floor and RELAY_OF_FLOOR * delivery_floor,
        ),
        (
            f"mixed at {top['rate']} orders/s" if top else "mixed",
            "orders/s",
            top,
            "achieved_per_s",
            "cpu_ms_per_order",
            MIXED_RATE,
        ),
    ]
    out = []
    for name, unit, row, rate_key, cpu_key, goal in paths:
        parts = (row or {}).get(cpu_key) or {}
        if row is None or not parts or None in parts.values():
            continue
        cpu_ms = sum(parts.values())
        allowed = cores * 1000 / cpu_ms if cpu_ms else None
        out.append(
            {
                "path": name,
                "unit": unit,
                "cpu_ms": cpu_ms,
                "allowed": allowed,
                "measured": row[rate_key],
                "of_bound": row[rate_key] / allowed if allowed else None,
                "goal": goal,
                "goal_cpu_ms": cores * 1000 / goal if goal else None,
                # The relay's fakes stand in for services that run elsewhere in production, but here they
                # share the cores: their CPU alone caps the relay, whatever Nexo's own cost.
                "fakes_allow": cores * 1000 / parts["fakes"] if parts.get("fakes") else None,
            }
        )
    return out


def table(results: dict) -> list[str]:
    rows = bounds(results)
    if not rows:
        return []
    cores = results["machine"]["cores"]
    lines = [
        f"What the {cores} cores allow: {cores} × 1000 ÷ the CPU ms of every process per unit, from this run's figures",
        f"    {'path':<28} {'CPU ms/unit':>11} {'cores allow':>15} {'measured':>10} {'of it':>7}"
        f"   {'goal':>15} {'needs ≤ CPU ms':>15}",
    ]
    for r in rows:
        lines.append(
            f"    {r['path']:<28} {r['cpu_ms']:>11.2f} {_rate(r['allowed'], r['unit']):>15} {r['measured']:>10,.0f}"
            f" {_pct(r['of_bound']):>7}   {_rate(r['goal'], r['unit']):>15} {_ms(r['goal_cpu_ms']):>15}"
        )
        if r["fakes_allow"] is not None and r["goal"] and r["fakes_allow"] < r["goal"]:
            share = r["fakes_allow"] / r["goal"] * 100
            lines.append(
                f"    {'':<28} the fakes alone allow {r['fakes_allow']:,.0f} {r['unit']}, {share:.0f} % of the goal:"
                " out of reach while they share the cores"
            )
    return lines + [""]


def _row(rows: list[dict] | None, key: str, value) -> dict | None:
    return next((r for r in rows or [] if r.get(key) == value), None) if value is not None else None


def _rate(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{value:,.0f} {unit}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f} %"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
