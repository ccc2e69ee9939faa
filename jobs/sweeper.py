"""The relay sweeper process (`python -m jobs.sweeper`): every RELAY_SWEEP_INTERVAL_S, get due events delivered.

A plain loop rather than rq's CronScheduler: the sweeper is what must keep working when Redis is down
(it then delivers events itself), and a scheduler that lives in Redis would stop with it (ADR-008).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading

from nexo.extensions import redis_for
from nexo.observability import configure_logging
from nexo.outbox import relay, sweeper
from nexo.outbox.wakeup import Wakeup
from nexo.settings import Settings, SettingsError, start_up_warnings
from nexo.telemetry import exporter

log = logging.getLogger("jobs.sweeper")


def main() -> int:
    """Validate the settings (fail fast), build the relay context once, then sweep until SIGTERM/SIGINT."""
    configure_logging()
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(f"nexo sweeper: configuration error: {exc}", file=sys.stderr)
        return 2
    for warning in start_up_warnings(settings):  # README, Running it safely: said by every production program
        log.warning("start-up warning: %s", warning)
    ctx = relay.build_context(settings, "sweeper")
    stop = threading.Event()
    if settings.fleet.relay_metrics_port:
        exporter.serve_host_metrics(
            settings.fleet.web_bind, settings.fleet.relay_metrics_port, settings.prometheus_multiproc_dir, stop
        )
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    cadence = settings.relay
    log.info(
        "sweeper %s: every %.1f s (lease %.1f s, delivery timeout %.1f s)",
        ctx.worker,
        cadence.sweep_interval_s,
        cadence.lease_s,
        cadence.delivery_timeout_s,
    )
    try:
        sweeper.run_forever(ctx, Wakeup(redis_for(settings), settings), stop)
    finally:
        ctx.close()
    log.info("sweeper %s: stopped", ctx.worker)
    return 0


if __name__ == "__main__":
    sys.exit(main())
