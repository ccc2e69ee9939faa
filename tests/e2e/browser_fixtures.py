"""Fixtures for the real-browser tests: Debian's Chromium driven by Playwright, a gunicorn of their own.

Imported by the browser test modules (``from tests.e2e.browser_fixtures import ...``), not registered
globally: only those modules pay for a browser.

Fixtures
--------
``browser`` (session)
    Playwright (sync API) driving ``/usr/bin/chromium``, headless, with the flags that keep it off the
    network, and with the back-forward cache on (as in a person's Chrome; Playwright's default turns it
    off). Skips, with the reason, when that binary is missing (``make test`` installs it through
    scripts/ensure_browser.sh) or the playwright package is not installed. Never downloads a browser.
``browser_without_bfcache`` (session)
    The same Chromium with Playwright's default flags (no back-forward cache): Back reloads the page.
``browser_web`` (session) → ``WebServer``
    The app under gunicorn (scripts/gunicorn_conf.py, as ``make run`` starts it) with FISCAL_URL /
    WAREHOUSE_URL pointing at the sandboxed fakes (so the dead-letter key check reaches them) and the
    relay's short test cadences. Its output goes to a file, which is how a test knows what the server
    really received: ``.requests_to("POST", "/orders/new")`` counts access-log lines and
    ``.create_order_outcomes(request_id)`` reads the ``create_order request=… outcome=…`` lines.
``people`` (per test) → ``People``
    ``people.login(username, javascript=True, next_path="/", browser=None)`` → a Playwright page in a
    fresh browser context (its own cookies: one person each), logged in through the real login form.
    Contexts closed at teardown.
``shots`` (per test) → ``Screenshots``
    ``shots.take(page, step)`` saves ``test-artifacts/browser/<test>-<step>.png`` (full page).
``axe_core`` (session) → str
    The source of axe-core's axe.min.js, the version scripts/ensure_axe.sh pins (the fixture runs it: it installs
    once into a cache outside the repository). When it cannot be had the test FAILS with the script's reason as
    root or in CI (``make test`` there is the accessibility gate) and skips with it elsewhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import DEMO_PASSWORD, running_gunicorn
from tests.relay_fixtures import RELAY_TEST_ENV

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"
# Root in a container: no sandbox. The rest keep Chromium from calling home on a closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
# Generous: two shared cores, a gunicorn, Postgres, Redis, the relay and Chromium at once.
TIMEOUT_MS = 20_000
_OUTCOME = re.compile(r"create_order request=(?P<request_id>[0-9a-f-]{36}) outcome=(?P<outcome>\w+)")


@pytest.fixture(scope="session")
def chromium_type():
    """Playwright's Chromium launcher for the session (skips when /usr/bin/chromium or playwright is missing)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(
            f"{CHROMIUM} is missing: install Debian's chromium (scripts/ensure_browser.sh, run by "
            "`make test`) to run the browser tests"
        )
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is not installed (it is in requirements.txt)"
    )
    sync_api.expect.set_options(timeout=TIMEOUT_MS)
    with sync_api.sync_playwright() as playwright:
        yield playwright.chromium


@pytest.fixture(scope="session")
def browser(chromium_type):
    """Headless Debian Chromium, with the back-forward cache a person's Chrome has.

    Playwright turns that cache off by default (--disable-back-forward-cache) so that request
    interception also sees history navigations; these tests intercept nothing, and the back button
    scenario is about what a salesperson's browser does, so the cache stays on.
    """
    chromium = chromium_type.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, ignore_default_args=["--disable-back-forward-cache"]
    )
    yield chromium
    chromium.close()


@pytest.fixture(scope="session")
def browser_without_bfcache(chromium_type):
    """The same Chromium with Playwright's default flags: no back-forward cache (pages reload on Back)."""
    chromium = chromium_type.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()


@pytest.fixture(scope="session")
def axe_core() -> str:
    """axe.min.js's source, found (and installed if need be) by scripts/ensure_axe.sh; see the module docstring."""
    found = subprocess.run(["bash", str(ROOT / "scripts" / "ensure_axe.sh")], capture_output=True, text=True, check=False)
    if found.returncode != 0:
        reason = found.stderr.strip().splitlines()[-1] if found.stderr.strip() else "scripts/ensure_axe.sh failed"
        if os.geteuid() == 0 or os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return Path(found.stdout.strip().splitlines()[-1]).read_text()


class WebServer:
    """A gunicorn running the app; see the module docstring."""

    def __init__(self, url: str, log_path: Path):
        self.url = url
        self.log_path = log_path

    def log_lines(self) -> list[str]:
        """Everything gunicorn and the app wrote so far."""
        return self.log_path.read_text(errors="replace").splitlines()

    def requests_to(self, method: str, path: str) -> int:
        """How many requests gunicorn answered for this method and path (its JSON access log lines)."""
        count = 0
        for line in self.log_lines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            count += entry.get("method") == method and entry.get("path") == path
        return count

    def create_order_outcomes(self, request_id: str) -> list[str]:
        """The outcome of every POST of the order form with this requestId that reached create_order."""
        outcomes = []
        for line in self.log_lines():
            try:
                message = json.loads(line).get("msg", "")
            except ValueError:
                message = line
            match = _OUTCOME.search(message)
            if match and match["request_id"] == request_id:
                outcomes.append(match["outcome"])
        return outcomes


@pytest.fixture(scope="session")
def browser_web(settings, fake_servers, tmp_path_factory):
    """gunicorn on a free port, FISCAL_URL/WAREHOUSE_URL at the fakes; yields a WebServer."""
    env = {
        **RELAY_TEST_ENV,
        "WEB_WORKERS": "2",
        "WEB_THREADS": "8",
        "FISCAL_URL": fake_servers["fiscal"],
        "WAREHOUSE_URL": fake_servers["warehouse"],
    }
    log_path = tmp_path_factory.mktemp("browser-web") / "gunicorn.log"
    with running_gunicorn(env, log_path) as url:
        yield WebServer(url, log_path)


class Screenshots:
    """Full-page screenshots named after the test: test-artifacts/browser/<test>-<step>.png."""

    def __init__(self, test_name: str):
        self.prefix = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name)
        self.saved: list[Path] = []

    def take(self, page, step: str) -> Path:
        """Save what the page shows now."""
        path = ARTIFACTS / f"{self.prefix}-{step}.png"
        page.screenshot(path=str(path), full_page=True)
        self.saved.append(path)
        return path


@pytest.fixture
def shots(request) -> Screenshots:
    """Screenshots of this test's pages."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return Screenshots(request.node.name)


class People:
    """One browser context per person, logged in through the login form."""

    def __init__(self, browser, base_url: str, shots: Screenshots):
        self.browser = browser
        self.base_url = base_url
        self.shots = shots
        self.contexts = []

    def login(self, username: str, *, javascript: bool = True, next_path: str = "/", browser=None):
        """A page of a new context (own cookies) where `username` is signed in; lands on next_path."""
        context = (browser or self.browser).new_context(
            base_url=self.base_url, java_script_enabled=javascript, locale="es-AR", viewport={"width": 1280, "height": 900}
        )
        context.set_default_timeout(TIMEOUT_MS)
        self.contexts.append(context)
        page = context.new_page()
        page.goto(f"/login?next={next_path}")
        page.locator("input[name=username]").fill(username)
        page.locator("input[name=password]").fill(DEMO_PASSWORD)
        self.shots.take(page, f"{username}-login")
        page.get_by_role("button", name="Ingresar").click()
        page.wait_for_url(lambda url: "/login" not in url)
        return page

    def close(self) -> None:
        """Close every context opened for this test."""
        for context in self.contexts:
            context.close()


@pytest.fixture
def people(browser, browser_web, shots):
    """Log people in, each in their own browser context; all closed after the test."""
    handle = People(browser, browser_web.url, shots)
    yield handle
    handle.close()


def fill_order(page, client: str, lines, *, deposit: str = "CEN") -> str:
    """Fill the open order form (client by name, deposit code, SKU/quantity rows); return its requestId."""
    value = page.locator("select[name=client_id] option", has_text=client).first.get_attribute("value")
    page.locator("select[name=client_id]").select_option(value)
    page.locator("select[name=deposit_id]").select_option(deposit)
    for index, (sku, quantity) in enumerate(lines):
        page.locator(f"input[name='lines-{index}-sku']").fill(sku)
        page.locator(f"input[name='lines-{index}-quantity']").fill(str(quantity))
    return page.locator("input[name=request_id]").input_value()
