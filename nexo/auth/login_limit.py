"""LOGIN_RATE_LIMIT_USERNAME (CONTRACT.md): each attempt takes its place BEFORE the password is checked.

At most N wrong passwords per username are checked in the window, however many arrive at once: a
Redis script (atomic) drops the places older than the window and takes one only while fewer than N
are held; a successful login gives its place back. Once they are spent, every attempt answers 429,
right password or not, until the oldest place leaves the window. The username is hashed before it
becomes a key (people type passwords into the username field). With Redis down the check is skipped
and logged: a login must not depend on the job transport (nexo/security.py says the same of the
per-address limit).
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from dataclasses import dataclass

import redis
from limits import parse as parse_limit

log = logging.getLogger(__name__)

# KEYS[1]: the username's sorted set of places (score: when taken, ms). ARGV: now, window, limit, place.
# Returns {1, places left} when a place was taken, {0, ms until the oldest place leaves} otherwise.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, math.floor(tonumber(oldest[2]) + tonumber(ARGV[2]) - tonumber(ARGV[1]))}
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, tonumber(ARGV[3]) - held - 1}
"""


@dataclass(frozen=True)
class Place:
    """A taken place: `last` when it was the last one (a wrong password now locks the username out)."""

    key: str
    member: str
    last: bool


@dataclass(frozen=True)
class Refused:
    """No place left: answer 429, with Retry-After."""

    retry_after_s: int


class UsernameLimiter:
    """The per-username allowance of wrong passwords, shared by every process through Redis."""

    def __init__(self, client: redis.Redis, limit: str):
        item = parse_limit(limit)
        self.redis = client
        self.amount = item.amount
        self.window_ms = int(item.get_expiry() * 1000)
        self._take = client.register_script(_TAKE)

    def take(self, username: str) -> Place | Refused | None:
        """Take a place for an attempt on this username; None when Redis could not be asked (fail open)."""
        key = "nexo-login:user:" + hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
        member = uuid.uuid4().hex
        try:
            taken, value = self._take(keys=[key], args=[int(time.time() * 1000), self.window_ms, self.amount, member])
        except redis.RedisError as exc:
            log.error("login limit per username not checked: Redis unavailable (%s)", type(exc).__name__)
            return None
        if not taken:
            return Refused(max(1, -(-int(value) // 1000)))
        return Place(key, member, last=int(value) == 0)

    def give_back(self, place: Place | None) -> None:
        """A successful login: its place no longer counts."""
        if place is None:
            return
        try:
            self.redis.zrem(place.key, place.member)
        except redis.RedisError as exc:
            log.warning("login place not given back (%s); it leaves the window on its own", type(exc).__name__)
