"""Read the five signals (docs/adr/ADR-012-operations-signals.md) in one short read-only transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from nexo.db import Conn, Database
from nexo.ops import queries
from nexo.processes import repository as processes

# A dashboard must never hold a connection long on a bad day, which is when it is looked at most.
STATEMENT_TIMEOUT = "5s"


@dataclass(frozen=True)
class CurrentSignals:
    """The values of the five signals now: what /metrics exposes and the top of /ops shows."""

    pending: dict[str, dict]
    failed: dict[str, dict]
    conflicts_per_hour: list[int]
    credit: dict[str, dict]
    transactions: dict[str, dict]
    processes: list[dict]  # guarantee 15: per program, restarts in 24 h, the last one, its state


@dataclass(frozen=True)
class Dashboard:
    """Everything /ops shows: the current values plus the 24-hour history behind the charts."""

    current: CurrentSignals
    transaction_outcomes: list[dict]
    transaction_p95_per_hour: list[float | None]
    pending_age_history: dict[str, list[float]]
    read_at: datetime


def _current(conn: Conn, host_expiry_s: float | None) -> CurrentSignals:
    return CurrentSignals(
        pending=queries.pending_events(conn),
        failed=queries.failed_events(conn),
        conflicts_per_hour=queries.conflicts_per_hour(conn),
        credit=queries.unresolved_credit(conn),
        transactions=queries.order_transaction_stats(conn),
        processes=processes.programs(conn, host_expiry_s),
    )


def read_current(db: Database, host_expiry_s: float | None = None) -> CurrentSignals:
    """The current value of every signal (for a Prometheus scrape); hosts unseen for host_expiry_s are left out."""
    with db.reading() as conn:
        queries.limit_statement_time(conn, STATEMENT_TIMEOUT)
        return _current(conn, host_expiry_s)


def read_dashboard(db: Database, host_expiry_s: float | None = None) -> Dashboard:
    """The current values and their last 24 hours (for the /ops page)."""
    with db.reading() as conn:
        queries.limit_statement_time(conn, STATEMENT_TIMEOUT)
        return Dashboard(
            current=_current(conn, host_expiry_s),
            transaction_outcomes=queries.order_transaction_outcomes(conn),
            transaction_p95_per_hour=queries.order_transaction_p95_per_hour(conn),
            pending_age_history=queries.pending_age_history(conn),
            read_at=datetime.now(UTC),
        )
