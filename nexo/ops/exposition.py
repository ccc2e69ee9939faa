"""The Prometheus text behind /metrics: counts and durations only, never business data.

Two sources, both correct with any number of gunicorn workers:
- the five signals as gauges computed from Postgres at scrape time (a custom collector), so every
  worker answers the same numbers;
- the in-process histogram and counter of nexo.telemetry.metrics, read from PROMETHEUS_MULTIPROC_DIR (every
  worker's files, summed) when multiprocess mode is on, or from this process otherwise.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily

from nexo.backup.status import BackupStatus, read_status
from nexo.db import Database
from nexo.ops import service
from nexo.settings import backup_settings
from nexo.telemetry import metrics

log = logging.getLogger(__name__)


def _gauge(name: str, doc: str, value, labels: dict | None = None) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=list(labels) if labels else None)
    if labels:
        family.add_metric(list(labels.values()), value)
    else:
        family.add_metric([], value)
    return family


class SignalsCollector:
    """Reads the five signals from the database on each scrape."""

    def __init__(self, db: Database, host_expiry_s: float | None = None) -> None:
        self.db = db
        self.host_expiry_s = host_expiry_s

    def collect(self):
        """Yield one metric family per signal, plus nexo_signals_up (0 when the database could not be read)."""
        try:
            current = service.read_current(self.db, self.host_expiry_s)
        except Exception as exc:  # a scrape during an outage must still answer, saying what it could not read
            log.warning("metrics: could not read the signals: %s", type(exc).__name__)
            yield _gauge("nexo_signals_up", "1 when the signals could be read from the database.", 0)
            return
        yield _gauge("nexo_signals_up", "1 when the signals could be read from the database.", 1)
        yield from _outbox_families(current)
        yield from _order_families(current)
        yield from _process_families(current)


def _per_destination(name: str, doc: str, rows: dict[str, dict], key: str) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=["destination"])
    for destination, row in rows.items():
        family.add_metric([destination], row[key] or 0)
    return family


def _outbox_families(current: service.CurrentSignals):
    yield _per_destination("nexo_outbox_pending_events", "Outbox events in PENDIENTE (signal 1).", current.pending, "pending")
    yield _per_destination(
        "nexo_outbox_oldest_pending_age_seconds",
        "Age of the oldest PENDIENTE outbox event; 0 when none is pending (signal 1).",
        current.pending,
        "oldest_age_s",
    )
    yield _per_destination("nexo_outbox_failed_events", "Outbox events in FALLIDO (signal 2).", current.failed, "failed")
    yield _per_destination(
        "nexo_dead_letters_pending",
        "Dead letters waiting for a human decision (signal 2).",
        current.failed,
        "dead_letters_pending",
    )


def _order_families(current: service.CurrentSignals):
    yield _gauge(
        "nexo_request_id_reused_last_hour",
        "request_id_reused conflicts in the last hour (signal 3).",
        current.conflicts_per_hour[-1],
    )
    yield _gauge(
        "nexo_request_id_reused_last_24h",
        "request_id_reused conflicts in the last 24 hours (signal 3).",
        sum(current.conflicts_per_hour),
    )
    soft, pending = current.credit["soft_reservations"], current.credit["pending_authorization"]
    yield _gauge("nexo_soft_reservations_unresolved", "BLANDA reservations not yet resolved (signal 4).", soft["count"])
    yield _gauge(
        "nexo_soft_reservation_oldest_age_seconds",
        "Age of the oldest unresolved BLANDA reservation; 0 when none (signal 4).",
        soft["oldest_age_s"] or 0,
    )
    yield _gauge("nexo_orders_pending_authorization", "Orders in PENDIENTE_AUTORIZACION (signal 4).", pending["count"])
    yield _gauge(
        "nexo_order_pending_authorization_oldest_age_seconds",
        "Age of the oldest order in PENDIENTE_AUTORIZACION; 0 when none (signal 4).",
        pending["oldest_age_s"] or 0,
    )
    for quantile in ("p50", "p95"):
        family = GaugeMetricFamily(
            f"nexo_order_transaction_{quantile}_seconds",
            f"{quantile} of order transaction durations over a window (signal 5).",
            labels=["window"],
        )
        for window, stats in current.transactions.items():
            if stats[quantile] is not None:
                family.add_metric([window], stats[quantile])
        yield family
    family = GaugeMetricFamily(
        "nexo_order_transactions", "Order transactions recorded over a window (signal 5).", labels=["window"]
    )
    for window, stats in current.transactions.items():
        family.add_metric([window], stats["count"])
    yield family


def _process_families(current: service.CurrentSignals):
    """Guarantee 15: restarts per supervised program (and gunicorn's own workers), and each program's state."""
    restarts = GaugeMetricFamily(
        "nexo_process_restarts_last_24h",
        "Times the program died and was started again, last 24 hours.",
        labels=["host", "program"],
    )
    last = GaugeMetricFamily(
        "nexo_process_last_restart_timestamp_seconds", "Unix time of the program's last restart.", labels=["host", "program"]
    )
    state = GaugeMetricFamily(
        "nexo_process_state",
        "1 for the state supervisor last reported for the program (RUNNING, RESTARTING, BACKOFF, FATAL).",
        labels=["host", "program", "state"],
    )
    for row in current.processes:
        labels = [row["host"], row["program"]]
        restarts.add_metric(labels, row["restarts_24h"])
        if row["last_restart_at"] is not None:
            last.add_metric(labels, row["last_restart_at"].timestamp())
        if row["state"] is not None:
            state.add_metric([*labels, row["state"]], 1)
    yield from (restarts, last, state)


def render(db: Database, multiproc_dir: str | None, host_expiry_s: float | None = None) -> bytes:
    """The whole /metrics body; multiproc_dir is Settings.prometheus_multiproc_dir.

    Every web host serves the database-wide gauges, the same numbers from the one database: sum them
    over instances and they count N times; the alert rules take `max without(instance)` (ADR-019).
    """
    registry = CollectorRegistry(auto_describe=False)
    if multiproc_dir:
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(_ProcessMetrics())
    registry.register(SignalsCollector(db, host_expiry_s))
    registry.register(BackupCollector(db))
    return generate_latest(registry)


def backup_status(db: Database | None) -> BackupStatus | None:
    """The backups' status (ADR-016), the database asked how far its finished WAL reaches when it answers."""
    settings = backup_settings()
    if db is None or not settings.backup_dir.is_dir():
        return read_status(settings)
    try:
        with db.reading() as conn:
            return read_status(settings, conn)
    except Exception as exc:  # the database is down: the archive's own word still counts
        log.warning("metrics: could not ask the database about its WAL: %s", type(exc).__name__)
        return read_status(settings)


class BackupCollector:
    """The backups' freshness (ADR-016), read from NEXO_BACKUP_DIR on each scrape; families without a
    sample where there is nothing yet (no backup kept on this host: with DATABASE_URL they are the operator's)."""

    def __init__(self, db: Database | None = None) -> None:
        self.db = db

    def collect(self):
        """Yield the newest verify (that held, and whether the last one held), archived WAL and base backup,
        and the archive's continuity up to the end of the WAL the server finished."""
        settings = backup_settings()
        current = backup_status(self.db)
        families = {
            "last_verified": GaugeMetricFamily(
                "nexo_backup_last_verified_timestamp_seconds", "Unix time of the newest backup verify that held."
            ),
            "verify_ok": GaugeMetricFamily(
                "nexo_backup_last_verify_ok", "1 when the newest backup verify held, 0 when it failed."
            ),
            "wal": GaugeMetricFamily(
                "nexo_backup_wal_archived_timestamp_seconds", "Unix time the newest WAL segment reached the archive."
            ),
            "base": GaugeMetricFamily("nexo_backup_newest_base_timestamp_seconds", "Unix time the newest base backup finished."),
            "lag": GaugeMetricFamily(
                "nexo_backup_max_lag_seconds", "BACKUP_MAX_LAG_S: the most a commit waits to reach the archive."
            ),
            "missing": GaugeMetricFamily(
                "nexo_backup_wal_missing_segments",
                "WAL segments missing from the archive between the oldest backup's start and the end of the WAL"
                " the server finished (the archive's newest segment when the server did not answer).",
            ),
            "failing": GaugeMetricFamily(
                "nexo_backup_archiver_failing", "1 when the server's newest attempt to archive a WAL segment failed."
            ),
        }
        if current is not None:
            moments = {
                "last_verified": current.last_verified_at,
                "wal": current.wal_archived_at,
                "base": current.newest_backup_at,
            }
            for key, moment in moments.items():
                if moment is not None:
                    families[key].add_metric([], moment.timestamp())
            families["lag"].add_metric([], settings.max_lag_s)
            if current.last_verify_ok is not None:
                families["verify_ok"].add_metric([], int(current.last_verify_ok))
            if current.wal_missing is not None:
                families["missing"].add_metric([], len(current.wal_missing))
            if current.archiver_failing is not None:
                families["failing"].add_metric([], int(current.archiver_failing))
        yield from families.values()


class _ProcessMetrics:
    """This process's own metrics, when there is no multiprocess directory to read them from."""

    def collect(self):
        """Yield the families of nexo.telemetry.metrics.REGISTRY."""
        yield from metrics.REGISTRY.collect()
