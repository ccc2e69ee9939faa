"""Every lock wait of an API write is bounded (ADR-015): a retry never pins a web thread behind a stuck request.

The use cases run on `BoundedLockWait(db)` instead of the pool's Database: the same transaction, with
`SET LOCAL lock_timeout` first. A healthy transaction of Nexo's holds its row locks for milliseconds, so
the bound only ends waits behind a stuck one. Whatever timed out, the transaction rolled back and
nothing was kept, so the same request (the same Idempotency-Key) is safe to send again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from psycopg.errors import LockNotAvailable

from nexo.api.problems import ApiProblem
from nexo.db import Database, Transaction

log = logging.getLogger(__name__)

# How long a request waits for a lock inside its transaction. The lock that matters most is the one a
# retry takes on its Idempotency-Key while the first request with that key is still running (ADR-007's
# claim): 2 s covers any healthy first request (the retry then replays it) and bounds a stuck one.
LOCK_WAIT_MS = 2000
RETRY_AFTER_S = "1"


class BoundedLockWait:
    """The Database a use case runs on, with every lock wait of its transaction bounded."""

    def __init__(self, db: Database, lock_wait_ms: int = LOCK_WAIT_MS):
        self._db, self._lock_wait_ms = db, lock_wait_ms

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """db.transaction() with `SET LOCAL lock_timeout` first (it ends with the transaction)."""
        with self._db.transaction() as tx:
            tx.execute("SELECT set_config('lock_timeout', %s, true)", [f"{self._lock_wait_ms}ms"])
            yield tx


@contextmanager
def lock_waits_answered(what: str, claim_relation: str | None = None) -> Iterator[None]:
    """Turn a lock wait that timed out into the API's answer: 409 request_in_progress when it was the
    Idempotency-Key's claim (a row of `claim_relation`, or its unique index), else 503 unavailable."""
    try:
        yield
    except LockNotAvailable as exc:
        context = exc.diag.context or ""
        if claim_relation is not None and claim_relation in context:
            raise ApiProblem(
                "request_in_progress",
                "A request with this Idempotency-Key is still being processed; send the same request again after Retry-After.",
                headers={"Retry-After": RETRY_AFTER_S},
            ) from None
        log.warning("api %s waited over %d ms for a row lock: %s", what, LOCK_WAIT_MS, context)
        raise ApiProblem(
            "unavailable",
            f"Nexo is too busy to take this {what} now; nothing was kept. Send the same request again after Retry-After.",
            headers={"Retry-After": RETRY_AFTER_S},
        ) from None
