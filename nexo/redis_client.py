"""How every part of Nexo reaches Redis: REDIS_URL alone, or the master Sentinel names (ADR-019).

One place for the web tier's client, the RQ workers' and the limiters' storage, so that all three follow
a Sentinel failover the same way. With REDIS_SENTINELS set, the host and port of REDIS_URL are ignored;
its password, database number and scheme (`rediss://`: TLS) still apply to the master. The sentinels
themselves are asked without a password (Debian's redis-sentinel has none unless configured).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis
from redis.connection import parse_url
from redis.sentinel import Sentinel


def _master_kwargs(url: str) -> dict:
    """The password, database number and TLS of REDIS_URL, for a connection to whatever master Sentinel names."""
    parsed = parse_url(url)
    kwargs = {k: parsed[k] for k in ("username", "password", "db") if parsed.get(k) is not None}
    if url.startswith("rediss://"):
        kwargs["ssl"] = True
        kwargs.update({k: v for k, v in parsed.items() if k.startswith("ssl_")})
    return kwargs


def connect(
    url: str,
    sentinels: Sequence[tuple[str, int]] = (),
    master: str | None = None,
    *,
    socket_timeout: float | None = 2.0,
    health_check_interval: int = 30,
) -> redis.Redis:
    """A Redis client that fails fast (socket_timeout None for a worker's blocking pop), through Sentinel if given."""
    timeouts = {"socket_timeout": socket_timeout, "socket_connect_timeout": 2, "health_check_interval": health_check_interval}
    if not sentinels:
        return redis.Redis.from_url(url, **timeouts)
    sentinel = Sentinel(list(sentinels), sentinel_kwargs={"socket_timeout": 1, "socket_connect_timeout": 1}, **timeouts)
    return sentinel.master_for(master or "", redis_class=redis.Redis, **_master_kwargs(url))


def limiter_storage(url: str, sentinels: Sequence[tuple[str, int]] = (), master: str | None = None) -> tuple[str, dict]:
    """The storage URI and options of the `limits` library (flask-limiter) for the same Redis."""
    options: dict = {"socket_connect_timeout": 1, "socket_timeout": 1}
    if not sentinels:
        # The limits library spells a Redis socket path redis+unix://; REDIS_URL may use unix://.
        return ("redis+" + url if url.startswith("unix://") else url), options
    hosts = ",".join(f"{host}:{port}" for host, port in sentinels)
    # The master's password and TLS go to the master only: sentinel_kwargs overrides them for the sentinels.
    options.update(_master_kwargs(url))
    options.update({"sentinel_kwargs": {"password": None, "ssl": False}, "use_replicas": False})
    return f"redis+sentinel://{hosts}/{master}", options
