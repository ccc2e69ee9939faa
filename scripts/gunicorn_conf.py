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
