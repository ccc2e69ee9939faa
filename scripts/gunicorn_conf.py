"""gunicorn settings for `make run` (and `make bench`, which measures this same configuration)."""

import os

bind = f"127.0.0.1:{os.environ.get('PORT', '5000')}"
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "8"))
timeout = 30
graceful_timeout = 10
accesslog = "-"
# The connection pool is created lazily in each worker after fork (nexo.db.Database.pool).
preload_app = False
# gunicorn 27's control socket lives at one path per user (~/.gunicorn/gunicorn.ctl): several gunicorns
# on one machine (tests, bench) would fight over it, and Nexo does not use it.
control_socket_disable = True

# Structured logs (issue 7): gunicorn's own lines as JSON; access lines carry the X-Request-ID.
logger_class = "nexo.observability.GunicornLogger"

# Prometheus multiprocess mode (issue 7): every worker writes its metric values to files in one
# directory that /metrics reads. scripts/stack.py gives `make run`/`make test` a fresh one; a gunicorn
# started any other way gets its own here, before any worker imports prometheus_client.
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    import tempfile

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="nexo-prometheus-")


def child_exit(server, worker):
    """A dead worker's live gauges must not be summed any more (prometheus-client multiprocess mode)."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
