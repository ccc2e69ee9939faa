"""All of Nexo's settings, read from the environment and validated once at start-up.

This is the only module that reads the environment (scripts/check_layers.py enforces it): the app
factory and the process mains build one Settings and hand it, or what is built from it, down.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlparse

from limits import parse as parse_limit

ENVIRONMENTS = ("production", "demo", "test")


class SettingsError(ValueError):
    """A setting is missing or malformed; the message says which and how to fix it."""


# A URL's password runs to the LAST @ before the path: a password typed with a raw @ is read so by urllib
# (and redis-py); libpq stops at the first and fails, and its message must not show the rest either.
# nexo/observability.py masks log lines with the same pattern (a sibling in the foundation layer).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/?#\s:]*):[^/?#\s]*@")


def redact_url(text: str) -> str:
    """text with the password of every `scheme://user:password@` replaced by *** (messages never echo one)."""
    return _USERINFO.sub(r"\1:***@", text)


def _url(env: dict, name: str, schemes: tuple[str, ...]) -> str:
    """A required URL: missing or malformed is a SettingsError."""
    value = _optional_url(env, name, schemes)
    if value is None:
        raise SettingsError(f"{name} is not set (expected a {'/'.join(schemes)} URL)")
    return value


def _optional_url(env: dict, name: str, schemes: tuple[str, ...]) -> str | None:
    """A URL that may be left unset (None); a malformed one is a SettingsError."""
    value = env.get(name, "").strip()
    if not value:
        return None
    parsed = urlparse(value)
    if parsed.scheme not in schemes:
        raise SettingsError(f"{name}={redact_url(value)!r} is not a {'/'.join(schemes)} URL")
    if parsed.scheme.startswith("http") and not parsed.netloc:
        raise SettingsError(f"{name}={redact_url(value)!r} has no host")
    return value


def _number(env: dict, name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r} is not a number") from None
    if value < minimum:
        raise SettingsError(f"{name}={raw!r} must be at least {minimum}")
    return value


# What an attempt may take beyond RELAY_DELIVERY_TIMEOUT_S (ADR-014): the caller waits this much longer
# for the HTTP loop to hand the result over (nexo/outbox/http_client.py), and the claim and record
# transactions around the call take milliseconds on a healthy database; a quarter second allows for
# a loaded machine. A database that hangs longer is what rq's job timeout is there to cut.
DELIVERY_WAIT_MARGIN_S = 0.5
RECORD_MARGIN_S = 0.25


@dataclass(frozen=True)
class RelayCadence:
    """How often and how long the relay waits. See check_relay_cadence for the invariant."""

    delivery_timeout_s: float = 5.0
    lease_s: float = 30.0
    sweep_interval_s: float = 10.0
    job_timeout_s: float = 20.0
    max_attempts: int = 8  # a proposal to validate with Operations (docs/unknowns.md)
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 3600.0

    @property
    def job_seconds(self) -> int:
        """The job timeout rq enforces: it counts whole seconds, so RELAY_JOB_TIMEOUT_S rounded down."""
        return max(1, math.floor(self.job_timeout_s))

    @property
    def attempt_worst_s(self) -> float:
        """The longest one attempt can take: claim, the HTTP deadline and its wait margin, record."""
        return self.delivery_timeout_s + DELIVERY_WAIT_MARGIN_S + RECORD_MARGIN_S


def check_relay_cadence(c: RelayCadence) -> None:
    """The lease outlives the job, the job outlives one attempt, the sweep outlives neither (ADR-008).

    A lease must outlive a whole delivery (HTTP timeout plus the bookkeeping around it, which the RQ
    job timeout bounds), or a healthy but slow worker is pre-empted and the event is sent twice for
    nothing. The sweep interval must be shorter than the lease, or an expired lease waits a whole extra
    sweep before anyone notices it.
    """
    if not c.delivery_timeout_s > 0:
        raise SettingsError("RELAY_DELIVERY_TIMEOUT_S must be greater than 0")
    if not c.job_seconds >= c.attempt_worst_s:
        # rq rounds the job timeout down to whole seconds (ADR-014): 5.1 s next to a 5 s delivery
        # timeout would let rq kill every job whose destination answers slowly but in time.
        raise SettingsError(
            f"RELAY_JOB_TIMEOUT_S ({c.job_timeout_s}) rounded down to whole seconds must be at least "
            f"RELAY_DELIVERY_TIMEOUT_S ({c.delivery_timeout_s}) + {DELIVERY_WAIT_MARGIN_S + RECORD_MARGIN_S:g} s: "
            "a job must outlive its HTTP call and the bookkeeping around it"
        )
    if not c.lease_s > c.job_timeout_s:
        raise SettingsError(
            f"RELAY_LEASE_S ({c.lease_s}) must be greater than RELAY_JOB_TIMEOUT_S ({c.job_timeout_s}): "
            "a lease that ends before the job does lets a second worker deliver while the first still runs"
        )
    if not c.lease_s > c.sweep_interval_s > 0:
        raise SettingsError(
            f"RELAY_SWEEP_INTERVAL_S ({c.sweep_interval_s}) must be greater than 0 and less than RELAY_LEASE_S ({c.lease_s})"
        )
    if c.max_attempts < 1:
        raise SettingsError("RELAY_MAX_ATTEMPTS must be at least 1")
    if not 0 < c.backoff_base_s <= c.backoff_cap_s:
        raise SettingsError("RELAY_BACKOFF_BASE_S must be greater than 0 and at most RELAY_BACKOFF_CAP_S")


@dataclass(frozen=True)
class SecuritySettings:
    """The security knobs: login rate limits, Secure cookie, proxies trusted; see nexo/security.py."""

    login_limit_per_username: str = "5 per 15 minutes"
    login_limit_per_ip: str = "20 per 15 minutes"
    cookie_secure: str = "auto"  # auto: Secure on HTTPS responses; always: Secure everywhere
    trusted_proxies: int = 0
    api_limit_per_key: str = "600 per minute"  # every request of one API key (nexo/api/setup.py)
    # Server-side sessions (ADR-018): idle and absolute limits, how long ended ones are kept.
    session_idle_s: float = 1800.0
    session_max_s: float = 43200.0
    session_keep_days: int = 30
    mfa_required: bool = False  # MFA_REQUIRED=on: dlq.admin and credit.authorize need a second factor

    @property
    def session_touch_s(self) -> float:
        """How stale last_seen_at may get before a request refreshes it: a minute, or a tenth of the idle limit."""
        return min(60.0, self.session_idle_s / 10)


def _security(env: dict) -> SecuritySettings:
    """Read LOGIN_RATE_LIMIT_USERNAME, LOGIN_RATE_LIMIT_IP, API_RATE_LIMIT, COOKIE_SECURE and TRUSTED_PROXIES."""
    defaults = SecuritySettings()
    proxies = env.get("TRUSTED_PROXIES", "").strip() or "0"
    if not proxies.isdigit():
        raise SettingsError(f"TRUSTED_PROXIES={proxies!r} must be a whole number (0 when no proxy is in front of Nexo)")
    security = SecuritySettings(
        login_limit_per_username=env.get("LOGIN_RATE_LIMIT_USERNAME", "").strip() or defaults.login_limit_per_username,
        login_limit_per_ip=env.get("LOGIN_RATE_LIMIT_IP", "").strip() or defaults.login_limit_per_ip,
        cookie_secure=env.get("COOKIE_SECURE", "").strip().lower() or defaults.cookie_secure,
        trusted_proxies=int(proxies),
        api_limit_per_key=env.get("API_RATE_LIMIT", "").strip() or defaults.api_limit_per_key,
        session_idle_s=_number(env, "SESSION_IDLE_S", defaults.session_idle_s, minimum=1.0),
        session_max_s=_number(env, "SESSION_MAX_S", defaults.session_max_s, minimum=1.0),
        session_keep_days=int(_number(env, "SESSION_KEEP_DAYS", defaults.session_keep_days, minimum=1)),
        mfa_required=_on_off(env, "MFA_REQUIRED", default=False),
    )
    for name, value in (
        ("LOGIN_RATE_LIMIT_USERNAME", security.login_limit_per_username),
        ("LOGIN_RATE_LIMIT_IP", security.login_limit_per_ip),
        ("API_RATE_LIMIT", security.api_limit_per_key),
    ):
        try:
            parse_limit(value)
        except ValueError:
            raise SettingsError(f"{name}={value!r} is not a rate limit like '5 per 15 minutes'") from None
    if security.cookie_secure not in ("auto", "always"):
        raise SettingsError(f"COOKIE_SECURE={security.cookie_secure!r} must be 'auto' or 'always'")
    return security


def _on_off(env: dict, name: str, *, default: bool) -> bool:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return default
    if raw not in ("on", "off"):
        raise SettingsError(f"{name}={raw!r} must be 'on' or 'off'")
    return raw == "on"


def _metrics_port(env: dict) -> int | None:
    raw = env.get("METRICS_PORT", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise SettingsError(f"METRICS_PORT={raw!r} must be a TCP port (1-65535)")
    return int(raw)


def data_directory(env: dict) -> Path:
    """NEXO_DATA_DIR (default `.data` in the repository): where `make run` keeps what it writes."""
    return Path(env.get("NEXO_DATA_DIR", "").strip() or Path(__file__).resolve().parent.parent / ".data").resolve()


@dataclass(frozen=True)
class BackupSettings:
    """Where the embedded Postgres's backups live and how fresh they must be (ADR-016)."""

    data_dir: Path  # NEXO_DATA_DIR: the kept cluster is data_dir/postgres
    backup_dir: Path  # NEXO_BACKUP_DIR: base/ (base backups), wal/ (the archive), dumps/
    max_lag_s: int  # BACKUP_MAX_LAG_S: the most a commit waits to reach the archive (archive.archive_timeout_s)
    keep_days: int  # BACKUP_KEEP_DAYS: base backups younger than this are kept, with the WAL they need

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "postgres"

    @property
    def wal_dir(self) -> Path:
        return self.backup_dir / "wal"

    @property
    def base_dir(self) -> Path:
        return self.backup_dir / "base"


def backup_settings(env: dict | None = None) -> BackupSettings:
    """NEXO_BACKUP_DIR (default <NEXO_DATA_DIR>/backups), BACKUP_MAX_LAG_S (60, at least 1), BACKUP_KEEP_DAYS (14)."""
    env = dict(os.environ if env is None else env)
    data_dir = data_directory(env)
    raw_dir = env.get("NEXO_BACKUP_DIR", "").strip()
    lag = env.get("BACKUP_MAX_LAG_S", "").strip() or "60"
    if not lag.isdigit() or int(lag) < 1:
        raise SettingsError(f"BACKUP_MAX_LAG_S={lag!r} must be a whole number of seconds, at least 1")
    keep = env.get("BACKUP_KEEP_DAYS", "").strip() or "14"
    if not keep.isdigit() or int(keep) < 1:
        raise SettingsError(f"BACKUP_KEEP_DAYS={keep!r} must be a whole number of days, at least 1")
    backup_dir = Path(raw_dir).resolve() if raw_dir else data_dir / "backups"
    return BackupSettings(data_dir=data_dir, backup_dir=backup_dir, max_lag_s=int(lag), keep_days=int(keep))


RUN_STATE = "run-state.json"


def write_run_state(data_dir: Path, state: dict) -> None:
    """What a `flask --app app …` command needs to reach the servers make run started (0600, replaced whole)."""
    path = data_dir / RUN_STATE
    part = path.with_suffix(".part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(state, out)
    os.replace(part, path)


def with_run_state(env: dict) -> dict:
    """env, completed from NEXO_DATA_DIR/run-state.json when it names neither NEXO_ENV nor DATABASE_URL.

    CONTRACT.md: run from the repository root, `flask --app app …` finds the servers `make run` uses
    with no other environment. make run records them when it starts its embedded servers; once it has
    stopped, the URLs lead nowhere and only commands that need no server (backup list, verify) work.
    """
    if env.get("NEXO_ENV", "").strip() or env.get("DATABASE_URL", "").strip():
        return env
    try:
        state = json.loads((data_directory(env) / RUN_STATE).read_text())
    except (OSError, ValueError):
        return env
    return {**{k: str(v) for k, v in state.items() if k in ("NEXO_ENV", "DATABASE_URL", "REDIS_URL")}, **env}


def kept_secret(path: Path) -> str:
    """A random secret kept in a file: created once (0600, O_EXCL), then read back.

    O_EXCL makes the file born private (no window under the default umask) and lets exactly one of
    several processes starting at once write it; the others read what it wrote.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process created it a moment ago and is writing it
            secret = path.read_text().strip()
            if secret:
                return secret
            time.sleep(0.02)
        raise SettingsError(f"{path} is empty: delete it and start again") from None
    secret = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as out:
        out.write(secret)
    return secret


def demo_secret_key(data_dir: Path) -> str:
    """The demo's SECRET_KEY: random, kept in NEXO_DATA_DIR (a constant would let anyone forge a demo session)."""
    return kept_secret(data_dir / "secret_key")


def check_production(env: dict) -> None:
    """What a production start needs (CONTRACT.md): SECRET_KEY, DATABASE_URL, a REDIS_URL with a password
    or TLS, METRICS_TOKEN or METRICS_PORT. Raise SettingsError naming the first one missing; ask nothing else."""
    secret_key = env.get("SECRET_KEY", "").strip()
    if not secret_key:
        raise SettingsError("SECRET_KEY is required outside demo/test (set NEXO_ENV=demo to try Nexo)")
    if len(secret_key) < 16:
        raise SettingsError("SECRET_KEY is too short: use at least 16 random characters")
    if not env.get("DATABASE_URL", "").strip():
        raise SettingsError("DATABASE_URL is required in production (Nexo starts no embedded database there)")
    redis_url = env.get("REDIS_URL", "").strip()
    if not redis_url:
        raise SettingsError("REDIS_URL is required in production (Nexo starts no embedded Redis there)")
    parsed = urlparse(redis_url)
    if parsed.scheme != "rediss" and not parsed.password:
        raise SettingsError(
            f"REDIS_URL={redact_url(redis_url)!r} has no password: in production Redis must ask for one "
            "(redis://:PASSWORD@host:6379/0, requirepass) or be reached over TLS (rediss://): whoever can write "
            "to it queues the relay's jobs"
        )
    if not env.get("METRICS_TOKEN", "").strip() and not env.get("METRICS_PORT", "").strip():
        raise SettingsError(
            "METRICS_TOKEN is required in production (scrapers then send Authorization: Bearer <token>), "
            "or METRICS_PORT to serve /metrics on that local port only"
        )


def start_up_warnings(settings: Settings, *, running_as_root: bool | None = None) -> list[str]:
    """What production should have but Nexo cannot enforce: said at start-up (README, Running it safely).

    Every production program logs these once as it starts (gunicorn's master, the relay workers, the
    sweeper, the maintenance runner), not only `make run`'s banner: under supervisor or systemd nothing
    else would say them. running_as_root: None asks about this process.
    """
    if settings.environment != "production":
        return []
    if running_as_root is None:
        running_as_root = os.geteuid() == 0
    warnings = []
    if settings.security.trusted_proxies == 0:
        warnings.append(
            "TRUSTED_PROXIES is 0: Nexo sees the proxy's address, not the client's (login limits, audit trail); "
            "set it to the number of proxies in front of Nexo"
        )
    if settings.security.cookie_secure != "always":
        warnings.append(
            "COOKIE_SECURE is not 'always': the session cookie is Secure only when the proxy says the request "
            "came over HTTPS (X-Forwarded-Proto); serve Nexo only behind a TLS proxy and set COOKIE_SECURE=always"
        )
    if running_as_root:
        warnings.append("running as root: run Nexo's programs as their own user (scripts/supervisor_conf.py --user nexo)")
    return warnings


def _fresh_login_window(env: dict) -> float:
    """DLQ_FRESH_LOGIN_S: how recent a sign-in must be to replay or discard a dead letter (ADR-010)."""
    raw = env.get("DLQ_FRESH_LOGIN_S", "").strip() or "900"
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"DLQ_FRESH_LOGIN_S={raw!r} is not a number of seconds") from None
    if value <= 0:
        raise SettingsError(f"DLQ_FRESH_LOGIN_S={raw!r} must be greater than 0")
    return value


# SMTP_URL's schemes: plain SMTP, SMTP upgraded with STARTTLS, SMTP over TLS from the first byte.
SMTP_SCHEMES = {"smtp": ("plain", 25), "smtp+starttls": ("starttls", 587), "smtps": ("tls", 465)}


@dataclass(frozen=True)
class MailSettings:
    """Where and how the maintenance runner sends email notifications (nexo/mail/); None when SMTP_URL is unset."""

    host: str
    port: int
    security: str  # plain, starttls or tls (SMTP_SCHEMES)
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never in a log line or a message
    sender: str = "Nexo <nexo@localhost>"  # MAIL_FROM
    timeout_s: float = 10.0  # SMTP_TIMEOUT_S: each connect, command and reply of a send
    max_attempts: int = 8  # MAIL_MAX_ATTEMPTS: then FALLIDO, shown on /ops
    backoff_base_s: float = 30.0  # MAIL_BACKOFF_BASE_S: delay = base × 2^(attempts - 1), capped
    backoff_cap_s: float = 3600.0  # MAIL_BACKOFF_CAP_S
    poll_s: float = 5.0  # MAIL_POLL_S: how often the sender looks for due messages

    @property
    def lease_s(self) -> float:
        """How long a claimed message is the sender's: a whole send (connect, greet, log in, MAIL, RCPT,
        DATA, the reply: each bounded by timeout_s) and its record, with room to spare; a sender killed
        mid-send releases it after this, and another sends it again under the same Message-ID."""
        return 8 * self.timeout_s + 5.0


def mail_settings(env: dict) -> MailSettings | None:
    """SMTP_URL (smtp://user:password@host:port, smtp+starttls://…, smtps://…) and the MAIL_* settings.

    A malformed value stops start-up; the message never repeats the URL, which may hold a password.
    """
    raw = env.get("SMTP_URL", "").strip()
    if not raw:
        return None
    expected = "expected smtp://user:password@host:port, smtp+starttls://… or smtps://…"
    scheme, sep, _ = raw.partition("://")
    if not sep or scheme.lower() not in SMTP_SCHEMES:
        shown = scheme if sep and len(scheme) < 20 and scheme.isprintable() else "none"
        raise SettingsError(f"SMTP_URL has scheme {shown!r}: {expected}")
    parsed = urlparse(raw)
    security, default_port = SMTP_SCHEMES[scheme.lower()]
    try:
        port = parsed.port or default_port
    except ValueError:
        raise SettingsError(f"SMTP_URL has a port that is not a number from 1 to 65535 ({expected})") from None
    if not parsed.hostname or "@" in parsed.hostname:
        raise SettingsError(f"SMTP_URL has no host ({expected}; write an @ or : in the password as %40 or %3A)")
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment:
        raise SettingsError(f"SMTP_URL must end after host:port ({expected})")
    if parsed.password is not None and not parsed.username:
        raise SettingsError(f"SMTP_URL has a password but no user ({expected})")
    sender = env.get("MAIL_FROM", "").strip() or MailSettings.sender
    if "@" not in sender or any(c in sender for c in "\r\n") or len(sender) > 200:
        raise SettingsError(f"MAIL_FROM={sender!r} must be an address like 'Nexo <nexo@example.com>'")
    mail = MailSettings(
        host=parsed.hostname,
        port=port,
        security=security,
        username=unquote(parsed.username) if parsed.username else None,
        password=unquote(parsed.password) if parsed.password is not None else None,
        sender=sender,
        timeout_s=_number(env, "SMTP_TIMEOUT_S", 10.0, minimum=0.1),
        max_attempts=int(_number(env, "MAIL_MAX_ATTEMPTS", 8, minimum=1)),
        backoff_base_s=_number(env, "MAIL_BACKOFF_BASE_S", 30.0, minimum=0.01),
        backoff_cap_s=_number(env, "MAIL_BACKOFF_CAP_S", 3600.0, minimum=0.01),
        poll_s=_number(env, "MAIL_POLL_S", 5.0, minimum=0.05),
    )
    if mail.backoff_base_s > mail.backoff_cap_s:
        raise SettingsError("MAIL_BACKOFF_BASE_S must be at most MAIL_BACKOFF_CAP_S")
    return mail


WORKER_CLASSES = ("simple", "fork")


def _relay_process(env: dict) -> dict:
    """RELAY_QUEUE, RELAY_WAKEUP (on/off) and RELAY_WORKER_CLASS (simple/fork): how the relay's processes run."""
    wakeup = env.get("RELAY_WAKEUP", "").strip().lower() or "on"
    if wakeup not in ("on", "off"):
        raise SettingsError(f"RELAY_WAKEUP={wakeup!r} must be 'on' or 'off'")
    worker_class = env.get("RELAY_WORKER_CLASS", "").strip() or "simple"
    if worker_class not in WORKER_CLASSES:
        raise SettingsError(f"RELAY_WORKER_CLASS={worker_class!r} must be one of {', '.join(WORKER_CLASSES)}")
    return {
        "relay_queue": env.get("RELAY_QUEUE", "").strip() or "nexo-relay",
        "relay_wakeup": wakeup == "on",
        "relay_worker_class": worker_class,
    }


# The processes a host runs (NEXO_ROLES, ADR-019): web (gunicorn), relay (RQ workers), sweeper,
# maintenance (retention and housekeeping: one at a time across hosts, by a lease) and the fakes.
ROLES = ("web", "relay", "sweeper", "maintenance", "fakes")


@dataclass(frozen=True)
class DatabaseTuning:
    """How connections to Postgres behave in a real deployment (ADR-019): poolers, dead peers, long statements."""

    prepare_threshold: int | None = 5  # psycopg's default; None: never prepare (PgBouncer in transaction mode)
    migration_url: str | None = None  # DATABASE_MIGRATION_URL; None: DATABASE_URL
    # A peer that stops answering (a host gone without a word) is given up after this long (libpq
    # keepalives and tcp_user_timeout), so no request thread waits on it for TCP's two hours.
    dead_peer_s: int = 15
    # Set on the database by `db upgrade` (per database, so every role's server connection starts with it,
    # PgBouncer's too); 0 leaves the server's value alone.
    statement_timeout_s: int = 30

    def connect_kwargs(self) -> dict:
        """libpq and psycopg keyword arguments for every connection Nexo opens (pools, listener, runner)."""
        interval = max(1, self.dead_peer_s // 6)
        return {
            "prepare_threshold": self.prepare_threshold,
            "keepalives": 1,
            "keepalives_idle": max(1, self.dead_peer_s // 3),
            "keepalives_interval": interval,
            "keepalives_count": 3,
            "tcp_user_timeout": self.dead_peer_s * 1000,
        }


def _database_tuning(env: dict, database_url: str) -> DatabaseTuning:
    """DB_PREPARE_THRESHOLD, DATABASE_MIGRATION_URL, DB_DEAD_PEER_S and DB_STATEMENT_TIMEOUT_S."""
    raw = env.get("DB_PREPARE_THRESHOLD", "").strip().lower() or "5"
    if raw == "none":
        threshold = None
    elif raw.isdigit():
        threshold = int(raw)
    else:
        raise SettingsError(f"DB_PREPARE_THRESHOLD={raw!r} must be a whole number or 'none' (PgBouncer in transaction mode)")
    return DatabaseTuning(
        prepare_threshold=threshold,
        migration_url=_optional_url(env, "DATABASE_MIGRATION_URL", ("postgresql", "postgres")) or database_url,
        dead_peer_s=int(_number(env, "DB_DEAD_PEER_S", 15, minimum=1)),
        statement_timeout_s=int(_number(env, "DB_STATEMENT_TIMEOUT_S", 30)),
    )


@dataclass(frozen=True)
class Fleet:
    """What this host is in a fleet (ADR-019): its roles, its name, where it listens, how Redis is found."""

    roles: frozenset[str] = frozenset(ROLES)
    web_bind: str = "127.0.0.1"
    host_id: str = "localhost"
    host_expiry_s: float = 3600.0  # a host unseen this long leaves /ops and /metrics (its rows are purged)
    redis_sentinels: tuple[tuple[str, int], ...] = ()
    redis_sentinel_master: str | None = None
    relay_metrics_port: int | None = None  # RELAY_METRICS_PORT: a worker host's own counters (nexo/telemetry/exporter.py)


def _host_port(item: str, name: str) -> tuple[str, int]:
    host, _, port = item.strip().rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SettingsError(f"{name}: {item.strip()!r} is not host:port")
    return host.strip("[]"), int(port)


def _fleet(env: dict) -> Fleet:
    """NEXO_ROLES, WEB_BIND, NEXO_HOST_ID, NEXO_HOST_EXPIRY_S, REDIS_SENTINELS, REDIS_SENTINEL_MASTER, RELAY_METRICS_PORT."""
    raw_roles = [r.strip() for r in (env.get("NEXO_ROLES", "").strip() or ",".join(ROLES)).split(",") if r.strip()]
    unknown = sorted(set(raw_roles) - set(ROLES))
    if unknown or not raw_roles:
        raise SettingsError(f"NEXO_ROLES={env.get('NEXO_ROLES')!r}: each role must be one of {', '.join(ROLES)}")
    sentinels = tuple(_host_port(i, "REDIS_SENTINELS") for i in env.get("REDIS_SENTINELS", "").split(",") if i.strip())
    master = env.get("REDIS_SENTINEL_MASTER", "").strip() or None
    if bool(sentinels) != bool(master):
        raise SettingsError("REDIS_SENTINELS and REDIS_SENTINEL_MASTER go together: the sentinels and the master's name")
    host_id = env.get("NEXO_HOST_ID", "").strip() or socket.gethostname()
    if len(host_id) > 100 or not host_id.isprintable():
        raise SettingsError(f"NEXO_HOST_ID={host_id!r} must be a printable name of at most 100 characters")
    return Fleet(
        roles=frozenset(raw_roles),
        web_bind=env.get("WEB_BIND", "").strip() or "127.0.0.1",
        host_id=host_id,
        host_expiry_s=_number(env, "NEXO_HOST_EXPIRY_S", 3600.0, minimum=60.0),
        redis_sentinels=sentinels,
        redis_sentinel_master=master,
        relay_metrics_port=int(_number(env, "RELAY_METRICS_PORT", 0, minimum=1)) or None,
    )


def web_bind(env: dict | None = None) -> str:
    """WEB_BIND alone, for scripts/gunicorn_conf.py (which runs before any Settings is built)."""
    return _fleet(dict(os.environ if env is None else env)).web_bind


@dataclass(frozen=True)
class Settings:
    """Process-wide settings; build with Settings.from_env()."""

    environment: str
    secret_key: str
    database_url: str
    redis_url: str
    fiscal_url: str | None
    warehouse_url: str | None
    demo_password: str
    metrics_token: str | None
    db_pool_max: int
    db_pool_timeout_s: float
    relay: RelayCadence = field(default_factory=RelayCadence)
    dead_letter_grace_days: int = 90
    outbox_retention_days: int | None = None  # open question: None keeps delivered events forever
    security: SecuritySettings = field(default_factory=SecuritySettings)
    dlq_fresh_login_s: float = 900.0
    # The directory this host's processes share for Prometheus values (multiprocess mode); None: one process.
    prometheus_multiproc_dir: str | None = None
    relay_queue: str = "nexo-relay"  # RELAY_QUEUE: the RQ queue of the relay's wake-ups
    relay_wakeup: bool = True  # RELAY_WAKEUP=off: committed events wait for the sweeper
    relay_worker_class: str = "simple"  # RELAY_WORKER_CLASS: rq's SimpleWorker, or fork (ADR-008)
    database: DatabaseTuning = field(default_factory=DatabaseTuning)
    fleet: Fleet = field(default_factory=Fleet)
    metrics_port: int | None = None  # METRICS_PORT: /metrics only on this local port (the web port answers 404)
    # WEBHOOK_PRIVATE_TARGETS=on: webhooks may be plain http and reach private addresses (ADR-022). Off in
    # production unless set: an integration's URL must not reach into the distributor's network (SSRF).
    webhook_private_targets: bool = False
    mail: MailSettings | None = None  # SMTP_URL: email notifications; None: off, nothing is queued
    # SERVER_TIMING=on: each answer says where its time went (nexo/request_timing.py). Off unless set: it
    # tells any client how long the database took, which is for whoever measures, not for the public.
    server_timing: bool = False

    @classmethod
    def from_env(cls, env: dict | None = None) -> Settings:
        """Read and validate the settings; raise SettingsError with a clear message."""
        # Only the process's own environment is completed from make run's record: a given dict says it all.
        env = with_run_state(dict(os.environ)) if env is None else dict(env)
        environment = env.get("NEXO_ENV", "production").strip() or "production"
        if environment not in ENVIRONMENTS:
            raise SettingsError(f"NEXO_ENV={environment!r} must be one of {', '.join(ENVIRONMENTS)}")
        if environment == "production":
            check_production(env)
        secret_key = env.get("SECRET_KEY", "").strip()
        if not secret_key:
            # The tests' processes share one constant; a demo keeps a random key of its own (ADR-018).
            secret_key = demo_secret_key(data_directory(env)) if environment == "demo" else "nexo-test-only-not-secret"
        relay = RelayCadence(
            delivery_timeout_s=_number(env, "RELAY_DELIVERY_TIMEOUT_S", 5.0),
            lease_s=_number(env, "RELAY_LEASE_S", 30.0),
            sweep_interval_s=_number(env, "RELAY_SWEEP_INTERVAL_S", 10.0),
            job_timeout_s=_number(env, "RELAY_JOB_TIMEOUT_S", _number(env, "RELAY_DELIVERY_TIMEOUT_S", 5.0) + 5.0),
            max_attempts=int(_number(env, "RELAY_MAX_ATTEMPTS", 8, minimum=1)),
            backoff_base_s=_number(env, "RELAY_BACKOFF_BASE_S", 1.0),
            backoff_cap_s=_number(env, "RELAY_BACKOFF_CAP_S", 3600.0),
        )
        check_relay_cadence(relay)
        grace = env.get("DEAD_LETTER_GRACE_DAYS", "90").strip() or "90"
        if not grace.lstrip("-").isdigit() or int(grace) < 1:
            raise SettingsError(f"DEAD_LETTER_GRACE_DAYS={grace!r} must be a whole number of days, at least 1")
        outbox_retention = env.get("OUTBOX_RETENTION_DAYS", "").strip()
        if outbox_retention and (not outbox_retention.isdigit() or int(outbox_retention) < 1):
            raise SettingsError(f"OUTBOX_RETENTION_DAYS={outbox_retention!r} must be a whole number of days, at least 1")
        database_url = _url(env, "DATABASE_URL", ("postgresql", "postgres"))
        return cls(
            environment=environment,
            secret_key=secret_key,
            database_url=database_url,
            redis_url=_url(env, "REDIS_URL", ("redis", "rediss", "unix")),
            fiscal_url=_optional_url(env, "FISCAL_URL", ("http", "https")),
            warehouse_url=_optional_url(env, "WAREHOUSE_URL", ("http", "https")),
            demo_password=env.get("NEXO_DEMO_PASSWORD", "nexo-demo"),
            metrics_token=env.get("METRICS_TOKEN") or None,
            db_pool_max=int(_number(env, "DB_POOL_MAX", 10, minimum=1)),
            db_pool_timeout_s=_number(env, "DB_POOL_TIMEOUT_S", 5.0, minimum=0.1),
            relay=relay,
            dead_letter_grace_days=int(grace),
            outbox_retention_days=int(outbox_retention) if outbox_retention else None,
            security=_security(env),
            dlq_fresh_login_s=_fresh_login_window(env),
            prometheus_multiproc_dir=env.get("PROMETHEUS_MULTIPROC_DIR", "").strip() or None,
            database=_database_tuning(env, database_url),
            fleet=_fleet(env),
            metrics_port=_metrics_port(env),
            webhook_private_targets=_on_off(env, "WEBHOOK_PRIVATE_TARGETS", default=environment != "production"),
            server_timing=_on_off(env, "SERVER_TIMING", default=False),
            mail=mail_settings(env),
            **_relay_process(env),
        )
