"""The API document tells the truth (ADR-020): Schemathesis, pinned in the dev group, generates requests for
every route of /api/v1/openapi.json and runs every one of its checks against Nexo under gunicorn.

Deterministic: Hypothesis' derandomized mode (`--generation-deterministic`: a fixed seed per route, no
example database), one worker, a bounded
number of examples per route. The key acts as a user who holds every API permission (sales, credit,
warehouse), so each route is reached past its 403; its rate limit is raised for the run (API_RATE_LIMIT),
no check is switched off. The database is the test's throwaway one: orders, shipments and payments the
generated requests create are fine there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.api_support import new_key
from tests.e2e.test_api_key_scopes import give_roles
from tests.ops_helpers import gunicorn

SCHEMATHESIS = Path(sys.executable).parent / "st"
CONFIG = Path(__file__).with_name("schemathesis.toml")  # which answers accept a valid request, and why
EXAMPLES_PER_ROUTE = 40


@pytest.mark.slow
def test_every_api_route_answers_as_its_document_says(db, tmp_path):
    give_roles(db, "vendedor1", "credito", "deposito")
    key = new_key(db, "vendedor1", name="schemathesis")
    with gunicorn(tmp_path / "web.log", API_RATE_LIMIT="100000 per minute", WEB_WORKERS="2") as base:
        run = subprocess.run(
            [
                str(SCHEMATHESIS),
                "--config-file",
                str(CONFIG),
                "run",
                f"{base}/api/v1/openapi.json",
                "--checks",
                "all",
                "--generation-deterministic",
                "--max-examples",
                str(EXAMPLES_PER_ROUTE),
                "--workers",
                "1",
                "--header",
                f"Authorization: Bearer {key}",
                "--request-timeout",
                "30",
                "--no-color",
                "--output-truncate",
                "false",
            ],
            cwd=tmp_path,  # its own files (.schemathesis/) stay out of the checkout
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    report = run.stdout + run.stderr
    (tmp_path / "schemathesis.txt").write_text(report, encoding="utf-8")
    assert run.returncode == 0, report[-20_000:]
