"""Hooks the use cases call to feed the operations signals, and Nexo's in-process Prometheus metrics.

The hooks must be cheap and must never raise: a metric is never a reason to fail an order. Each one
feeds two places: a Prometheus metric of this process (multiprocess-safe under gunicorn when
PROMETHEUS_MULTIPROC_DIR is set: scripts/stack.py and scripts/gunicorn_conf.py set it; prometheus_client
reads it itself) and the durable history in Postgres that /ops charts (nexo.telemetry.recorder).
"""

from __future__ import annotations

import logging
import re

from prometheus_client import CollectorRegistry, Counter, Histogram

from nexo.telemetry.recorder import recorder

log = logging.getLogger(__name__)

# Used only without PROMETHEUS_MULTIPROC_DIR (a single process, e.g. `flask run`); in multiprocess
# mode the values live in that directory's files and /metrics reads them from there.
REGISTRY = CollectorRegistry(auto_describe=True)

ORDER_TRANSACTION_SECONDS = Histogram(
    "nexo_order_transaction_seconds",
    "Duration of order (reservation) transactions, by outcome (ADR-012 signal 5).",
    ["outcome"],
    registry=REGISTRY,
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
REQUEST_ID_REUSED = Counter(
    "nexo_request_id_reused",
    "request_id_reused conflicts: a requestId sent again with other content (ADR-012 signal 3).",
    ["source"],
    registry=REGISTRY,
)

RELAY_ATTEMPTS = Counter(
    "nexo_relay_attempts",
    "Delivery attempts this host's relay processes recorded, by destination and outcome (ADR-019).",
    ["destination", "outcome"],
    registry=REGISTRY,
)

# Outcomes become label values: keep them a short identifier so a caller's bug cannot explode the
# number of time series.
_OUTCOME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def init_app(database_url: str, connect_kwargs: dict | None = None) -> None:
    """Send this process's durable signal history to the app's database."""
    recorder.configure(database_url, connect_kwargs)


def observe_order_transaction(seconds: float, outcome: str) -> None:
    """Duration of one create_order/approval transaction (ADR-012 signal 5); outcome e.g. 'confirmed'."""
    try:
        label = outcome if isinstance(outcome, str) and _OUTCOME.match(outcome) else "other"
        ORDER_TRANSACTION_SECONDS.labels(label).observe(max(0.0, float(seconds)))
        recorder.observe(seconds, label)
    except Exception:  # a metric must never fail an order
        log.warning("observe_order_transaction failed", exc_info=True)


def count_request_id_reused() -> None:
    """One `request_id_reused` conflict happened (ADR-012 signal 3); called after the order rolled back."""
    try:
        REQUEST_ID_REUSED.labels("order_entry").inc()
        recorder.record_event("request_id_reused")
    except Exception:  # a metric must never fail an order
        log.warning("count_request_id_reused failed", exc_info=True)


def count_relay_attempts(attempts: list[tuple[str, str]]) -> None:
    """Count recorded delivery attempts, (destination, outcome) each; never raises."""
    try:
        for destination, outcome in attempts:
            label = outcome if _OUTCOME.match(outcome.lower()) else "other"
            RELAY_ATTEMPTS.labels(destination if _OUTCOME.match(destination) else "other", label).inc()
    except Exception:  # a metric must never fail a delivery
        log.warning("count_relay_attempts failed", exc_info=True)


# The authentication trail's counters (ADR-018): a burst of failures or any lockout is worth an alert
# (deploy/prometheus/nexo-alerts.yml); who and from where is in the audit log, not in a label.
LOGIN_FAILURES = Counter(
    "nexo_login_failures", "Logins refused for a wrong username, password or second factor.", registry=REGISTRY
)
LOGIN_LOCKOUTS = Counter(
    "nexo_login_lockouts", "Usernames that spent their wrong-password allowance (LOGIN_RATE_LIMIT_USERNAME).", registry=REGISTRY
)
LOGIN_LOCKED_REFUSALS = Counter(
    "nexo_login_locked_refusals",
    "Login attempts answered 429 because their username had spent its allowance (LOGIN_RATE_LIMIT_USERNAME).",
    registry=REGISTRY,
)


def count_login_failure() -> None:
    """One login (password or second factor) was refused."""
    try:
        LOGIN_FAILURES.inc()
    except Exception:  # a metric must never fail a login
        log.warning("count_login_failure failed", exc_info=True)


def count_login_lockout() -> None:
    """A username spent its allowance of wrong passwords: its next attempts answer 429 until the window moves."""
    try:
        LOGIN_LOCKOUTS.inc()
    except Exception:  # a metric must never fail a login
        log.warning("count_login_lockout failed", exc_info=True)


def count_login_locked_refusal() -> None:
    """An attempt on a locked-out username was answered 429 without checking its password: someone keeps trying."""
    try:
        LOGIN_LOCKED_REFUSALS.inc()
    except Exception:  # a metric must never fail a login
        log.warning("count_login_locked_refusal failed", exc_info=True)
