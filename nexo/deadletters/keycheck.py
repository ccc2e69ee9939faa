"""Ask a destination whether it already applied an Idempotency-Key, before an admin replays (issue 6).

The question goes over HTTP with no transaction open (ADR-004): read the dead letter, close the
transaction, ask, then write the audit row in a new transaction. The answer is only information: a
replay is safe either way, because the destination deduplicates by the same key (ADR-005).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import requests

from nexo import audit
from nexo.db import Database
from nexo.deadletters import repository
from nexo.outbox.registry import DESTINATIONS
from nexo.outbox.storable import storable_text
from nexo.settings import Settings

log = logging.getLogger(__name__)

APPLIED, NOT_APPLIED, UNKNOWN = "applied", "not_applied", "unknown"


@dataclass(frozen=True)
class KeyAnswer:
    """What the destination said: applied (200), not_applied (404) or unknown (anything else)."""

    answer: str
    http_status: int | None = None
    detail: str = ""


def ask_destination(base_url: str | None, destination: str, key: str, timeout_s: float) -> KeyAnswer:
    """One GET to the destination's lookup route; never raises (a failure is an 'unknown' answer)."""
    if not base_url:
        return KeyAnswer(UNKNOWN, detail="el destino no tiene URL configurada")
    # Where the destination answers "did you apply this key?" is in its registry entry (CONTRACT.md).
    url = DESTINATIONS[destination].lookup_url(base_url, key)
    try:
        response = requests.get(url, timeout=timeout_s, allow_redirects=False,
                                headers={"Accept": "application/json"})
    except requests.Timeout:
        return KeyAnswer(UNKNOWN, detail=f"sin respuesta en {timeout_s:g} s")
    except requests.RequestException as exc:
        return KeyAnswer(UNKNOWN, detail=f"no se pudo conectar ({type(exc).__name__})")
    if response.status_code == 200:
        return KeyAnswer(APPLIED, 200, storable_text(response.text))   # it goes into the audit row
    if response.status_code == 404:
        return KeyAnswer(NOT_APPLIED, 404)
    return KeyAnswer(UNKNOWN, response.status_code, f"respuesta inesperada {response.status_code}")


def check_key(db: Database, settings: Settings, dead_letter_id: int, actor: str) -> KeyAnswer | None:
    """Ask the dead letter's destination about its event id and audit the question; None if it does not exist."""
    with db.reading() as conn:
        state = repository.current_state(conn, dead_letter_id)
    if state is None:
        return None
    # The transaction above is closed: the HTTP call below may take the whole timeout (ADR-004).
    answer = ask_destination(DESTINATIONS[state["destination"]].base_url(settings), state["destination"],
                             str(state["event_id"]), settings.relay.delivery_timeout_s)
    with db.transaction() as tx:
        audit.append(tx.conn, actor=actor, action="dead_letter.key_checked", object_type="dead_letter",
                     object_id=dead_letter_id,
                     details={"event_id": str(state["event_id"]), "destination": state["destination"],
                              "answer": answer.answer, "http_status": answer.http_status, "detail": answer.detail})
        tx.commit()
    log.info("idempotency key of dead letter %s checked by %s: %s", dead_letter_id, actor, answer.answer)
    return answer
