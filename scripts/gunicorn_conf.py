"""gunicorn settings for `make run` (and `make bench`, which measures this same configuration)."""

import os

from nexo.settings import web_bind

# WEB_BIND (default 127.0.0.1): a fleet's web hosts listen where the balancer reaches them (ADR-019).
bind = [f"{web_bind()}:{os.environ.get('PORT', '5000')}"]
# METRICS_PORT: /metrics is served on this second listener, on 127.0.0.1 only, and nowhere else (nexo/ops/views.py).
if os.environ.get("METRICS_PORT", "").strip():
    bind.append(f"127.0.0.1:{os.environ['METRICS_PORT'].strip()}")
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "8"))
timeout = 30
# Request lines up to 8190 bytes reach the app, which refuses a URL past 4096 characters itself
# (nexo/errors.py MAX_URL): in problem+json under /api/, never gunicorn's bare HTML 414.
limit_request_line = 8190
graceful_timeout = 10
accesslog = "-"
# The connection pool is created lazily in each worker after fork (nexo.db.Database.pool).
preload_app = False
# gunicorn 27's control socket lives at one path per user (~/.gunicorn/gunicorn.ctl): several gunicorns
# on one machine (tests, bench) would fight over it, and Nexo does not use it.
control_socket_disable = True

# Structured logs: gunicorn's own lines as JSON; access lines carry the X-Request-ID.
logger_class = "nexo.observability.GunicornLogger"

# Prometheus multiprocess mode (guarantee 13): every worker writes its metric values to files in one
# directory that /metrics reads. scripts/stack.py gives `make run`/`make test` a fresh one; a gunicorn
# started any other way gets its own here, before any worker imports prometheus_client.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    import tempfile

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="nexo-prometheus-")


def on_starting(server):
    """Say, once in the master, what production should have and Nexo cannot enforce (README, Running it safely).

    Under supervisor or systemd gunicorn is started directly: make run's banner, which says them too, is
    not there. A settings error is left to the workers, which refuse to boot naming it.
    """
    from nexo.settings import Settings, SettingsError, start_up_warnings

    try:
        settings = Settings.from_env()
    except SettingsError:
        return
    for warning in start_up_warnings(settings):
        server.log.warning("start-up warning: %s", warning)


def child_exit(server, worker):
    """Forget a dead worker's live gauges; count a worker that died while the server was serving."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
    # gunicorn gives this hook no exit status. While the arbiter still has its listening sockets it is
    # not shutting down, and Nexo sets neither max_requests nor reloads: a worker leaving then died
    # (killed, crashed, timed out) and the arbiter is starting a new one (guarantee 15).
    if server.LISTENERS:
        _record_worker_death(server, worker.pid)


def _record_worker_death(server, pid: int) -> None:
    import psycopg
    from psycopg.rows import dict_row

    from nexo.processes import repository
    from nexo.settings import Settings

    try:
        settings = Settings.from_env()
        kwargs = {**settings.database.connect_kwargs(), "connect_timeout": 2, "autocommit": True, "row_factory": dict_row}
        with psycopg.connect(settings.database_url, **kwargs) as conn:
            repository.insert_event(
                conn, settings.fleet.host_id, "web.worker", "worker_exited", pid, "gunicorn replaced a worker that died"
            )
    except Exception as exc:  # the database is down: the arbiter's own log line is all there is
        server.log.warning("could not record the death of worker %s: %s", pid, type(exc).__name__)
