"""A worker host's own metrics (ADR-019): its relay processes' counters on RELAY_METRICS_PORT.

A host without the web role has no /metrics. Every relay process of the host (workers, sweeper) writes
its counters to the host's PROMETHEUS_MULTIPROC_DIR, and each one tries to serve that whole directory on
RELAY_METRICS_PORT: whichever binds the port first serves the host, the others try again every few
seconds, so the port is served again soon after its server dies.
"""

from __future__ import annotations

import logging
import threading

from prometheus_client import CollectorRegistry, multiprocess, start_http_server

from nexo.telemetry import metrics

log = logging.getLogger(__name__)
RETRY_S = 5.0


def _registry(multiproc_dir: str | None) -> CollectorRegistry:
    if not multiproc_dir:
        return metrics.REGISTRY  # one process: its own counters only
    registry = CollectorRegistry(auto_describe=False)
    multiprocess.MultiProcessCollector(registry, path=multiproc_dir)
    return registry


def serve_host_metrics(bind: str, port: int, multiproc_dir: str | None, stop: threading.Event) -> threading.Thread:
    """Keep trying to serve the host's metrics on bind:port until it works or `stop` is set (a daemon thread)."""

    def keep_trying() -> None:
        while not stop.is_set():
            try:
                start_http_server(port, addr=bind, registry=_registry(multiproc_dir))
                log.info("serving this host's relay metrics on %s:%d", bind, port)
                return
            except OSError:  # another relay process of this host serves them
                stop.wait(RETRY_S)

    thread = threading.Thread(target=keep_trying, name="nexo-metrics-exporter", daemon=True)
    thread.start()
    return thread
