"""Security hardening applied to every response and to the login form.

Decisions:
- Headers on every response: a Content-Security-Policy that allows scripts and styles only from our
  own static files (no 'unsafe-inline': templates carry no inline script or style= attribute), no
  framing, no plugins; nosniff; Referrer-Policy same-origin; X-Frame-Options DENY for old browsers;
  HSTS when the request came over HTTPS.
- Session cookie: HttpOnly and SameSite=Lax (create_app), plus Secure whenever the request was served
  over HTTPS (request.is_secure), decided per response. Behind a TLS-terminating proxy set
  TRUSTED_PROXIES to the number of proxies in front of Nexo: werkzeug's ProxyFix then trusts that many
  X-Forwarded-For/-Proto hops, which also gives the login limit the client's address instead of the
  proxy's. COOKIE_SECURE=always marks the cookie Secure even on plain HTTP (a belt for deployments
  whose proxy does not send X-Forwarded-Proto).
- Login rate limits, counted in Redis so every worker and process shares them: LOGIN_RATE_LIMIT_USERNAME
  per username (default 5 per 15 minutes) takes its place BEFORE the password check, atomically
  (nexo/auth/login_limit.py, CONTRACT.md); LOGIN_RATE_LIMIT_IP per client address (default 20 per 15
  minutes, Flask-Limiter, moving window) counts the failed attempts (401). Security settings
  (nexo.settings.SecuritySettings), not business rules. When Redis is down both fail open (login keeps
  working) and log the failure.
- `Cache-Control: no-store` on every answer to a logged-in person and on /api/ (ADR-018): a shared
  computer's cache or a proxy never keeps a page with credit limits or orders.
"""

from __future__ import annotations

import logging
import time

from flask import g, has_request_context, request
from flask.sessions import SecureCookieSessionInterface
from flask_limiter import Limiter
from werkzeug.middleware.proxy_fix import ProxyFix

from nexo import redis_client
from nexo.settings import SecuritySettings

log = logging.getLogger(__name__)

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}
HSTS = "max-age=31536000"


class HttpsAwareSessionInterface(SecureCookieSessionInterface):
    """The signed-cookie session, whose cookie is Secure whenever the request came over HTTPS."""

    def get_cookie_secure(self, app) -> bool:
        """Secure if configured so, or if this request was served over HTTPS."""
        return bool(app.config["SESSION_COOKIE_SECURE"]) or (has_request_context() and request.is_secure)


def init_app(app, settings: SecuritySettings, redis_url: str, sentinels=(), sentinel_master: str | None = None) -> None:
    """Apply headers, cookie flags, proxy trust and the login rate limits to app (after its blueprints).

    sentinels, sentinel_master: REDIS_SENTINELS and REDIS_SENTINEL_MASTER, when Redis is found through Sentinel.
    """
    if settings.trusted_proxies:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=settings.trusted_proxies, x_proto=settings.trusted_proxies)
    app.session_interface = HttpsAwareSessionInterface()
    if settings.cookie_secure == "always":
        app.config.update(SESSION_COOKIE_SECURE=True, REMEMBER_COOKIE_SECURE=True)
    app.after_request(add_security_headers)
    _init_login_limits(app, settings, redis_client.limiter_storage(redis_url, sentinels, sentinel_master))


def add_security_headers(response):
    """Set the security headers on a response (a view may already have set a stricter one)."""
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    user = g.get("_login_user")  # loaded for every page behind the login, never for static files
    if request.path.startswith("/api/") or (user is not None and user.is_authenticated):
        response.headers["Cache-Control"] = "no-store"
    if request.is_secure:
        response.headers.setdefault("Strict-Transport-Security", HSTS)
    if response.status_code == 429 and g.get("retry_after_s"):
        response.headers["Retry-After"] = str(g.retry_after_s)
    return response


# --- login rate limits -------------------------------------------------------------------------


def login_rate_limited(view):
    """Mark a view for the login limits; init_app wraps it with this app's limiter."""
    view.nexo_login_rate_limited = True
    return view


def _client_key() -> str:
    return "ip:" + (request.remote_addr or "unknown")


def _failed_login(response) -> bool:
    return response.status_code == 401


def _breached(kind: str):
    def on_breach(limit) -> None:
        g.retry_after_s = max(1, int(limit.reset_at - time.time()))
        log.warning("login rate limit reached (%s); refusing with 429", kind)

    return on_breach


def _init_login_limits(app, settings: SecuritySettings, storage: tuple[str, dict]) -> None:
    """One limiter per app (tests build several apps against different Redis servers)."""
    storage_uri, storage_options = storage
    limiter = Limiter(
        _client_key,
        storage_uri=storage_uri,
        # Fail fast when Redis hangs: a login waits at most about a second for its limit check
        # (redis_client.limiter_storage: socket timeouts of 1 s).
        storage_options=storage_options,
        strategy="moving-window",
        key_prefix="nexo-login",
        # Fail open: with Redis down the check is skipped and flask-limiter logs the error
        # ("Failed to rate limit. Swallowing error"); a login must not depend on the job transport.
        swallow_errors=True,
        headers_enabled=False,
    )
    limiter.init_app(app)
    app.extensions["nexo.limiter"] = limiter
    per_ip = limiter.limit(
        settings.login_limit_per_ip,
        key_func=_client_key,
        methods=["POST"],
        deduct_when=_failed_login,
        on_breach=_breached("per client address"),
    )
    limited = RateLimited(endpoints=set(), blueprints=set())
    for endpoint, view in list(app.view_functions.items()):
        if getattr(view, "nexo_login_rate_limited", False):
            app.view_functions[endpoint] = per_ip(view)
            limited.endpoints.add(endpoint)
    app.extensions["nexo.rate_limited"] = limited
    limiter.request_filter(limited.exempt)


class RateLimited:
    """The endpoints and blueprints that carry a limit; every other request skips flask-limiter.

    flask-limiter works out, before every request, which of its limits apply to it: a measurable share
    of the CPU of the order form's POST, which has none (ADR-011).
    A blueprint that gets a limit adds itself here (nexo/api/setup.py).
    """

    def __init__(self, *, endpoints: set[str], blueprints: set[str]):
        self.endpoints = endpoints
        self.blueprints = blueprints

    def exempt(self) -> bool:
        """flask-limiter's request filter: True when no limit applies to this request."""
        return request.endpoint not in self.endpoints and request.blueprint not in self.blueprints
