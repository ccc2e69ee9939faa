"""METRICS_PORT (ADR-018): /metrics only on a second, local listener of gunicorn; the web port answers it 404
and the metrics port serves nothing else."""

from __future__ import annotations

import requests

from tests.helpers import free_port, running_gunicorn


def test_metrics_are_served_on_their_own_local_port_only():
    port = free_port()
    with running_gunicorn({"METRICS_PORT": str(port), "WEB_WORKERS": "1", "WEB_THREADS": "2"}) as web:
        metrics = f"http://127.0.0.1:{port}"
        assert requests.get(web + "/metrics", timeout=10).status_code == 404
        answer = requests.get(metrics + "/metrics", timeout=10)
        assert answer.status_code == 200 and "nexo_signals_up" in answer.text
        assert requests.get(metrics + "/login", timeout=10).status_code == 404
        assert requests.get(metrics + "/health", timeout=10).status_code == 404
        assert requests.get(web + "/login", timeout=10).status_code == 200
