"""Ask a destination whether it already applied an Idempotency-Key, before an admin replays (ADR-010).

The question goes over HTTP with no transaction open (ADR-004): read the dead letter, close the
transaction, ask, then write the audit row in a new transaction. The answer is only information: a
replay is safe either way, because the destination deduplicates by the same key (ADR-005).
The question has one wall-clock deadline and a byte cap, like a delivery (ADR-014's HttpClient): a
destination that dribbles its answer must not hold a web thread, nor a 20 MB answer fill its memory.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from nexo import audit
from nexo.db import Database
from nexo.deadletters import repository
from nexo.outbox.http_client import DeadlineExceeded, HttpClient
from nexo.outbox.registry import DESTINATIONS, route
from nexo.outbox.storable import storable_text
from nexo.settings import Settings

log = logging.getLogger(__name__)

APPLIED, NOT_APPLIED, UNKNOWN = "applied", "not_applied", "unknown"

_clients: dict[tuple[int, float], HttpClient] = {}
_clients_lock = threading.Lock()


def _client(deadline_s: float) -> HttpClient:
    """This process's client, built on first use: its loop thread does not survive gunicorn's fork."""
    key = (os.getpid(), deadline_s)
    with _clients_lock:
        if key not in _clients:
            _clients[key] = HttpClient(deadline_s)
        return _clients[key]


@dataclass(frozen=True)
class KeyAnswer:
    """What the destination said: applied (200), not_applied (404) or unknown (anything else)."""

    answer: str
    http_status: int | None = None
    detail: str = ""


def ask_destination(base_url: str | None, event_type: str, key: str, timeout_s: float) -> KeyAnswer:
    """One GET to the lookup route of the event's type; never raises (a failure is an 'unknown' answer)."""
    if route(event_type).lookup_path is None:
        # A webhook receiver is the integration's own server: Nexo cannot ask it (ADR-022). A replay is
        # safe anyway, it deduplicates by the same Idempotency-Key.
        return KeyAnswer(UNKNOWN, detail="este destino no permite preguntar si ya recibió el aviso")
    if not base_url:
        return KeyAnswer(UNKNOWN, detail="el destino no tiene URL configurada")
    # Where the destination answers "did you apply this key?" is in the event type's route (CONTRACT.md):
    # an invoice and its credit note are looked up at different paths of the same destination.
    url = route(event_type).lookup_url(base_url, key)
    try:
        answer = _client(timeout_s).request("GET", url, headers={"Accept": "application/json"})
    except DeadlineExceeded:
        return KeyAnswer(UNKNOWN, detail=f"sin respuesta en {timeout_s:g} s")
    except Exception as exc:  # refused, reset, a broken answer: the answer is unknown, never an error page
        return KeyAnswer(UNKNOWN, detail=f"no se pudo conectar ({type(exc).__name__})")
    if answer.status == 200:
        return KeyAnswer(APPLIED, 200, storable_text(answer.text()))  # it goes into the audit row
    if answer.status == 404:
        return KeyAnswer(NOT_APPLIED, 404)
    return KeyAnswer(UNKNOWN, answer.status, f"respuesta inesperada {answer.status}")


def check_key(db: Database, settings: Settings, dead_letter_id: int, actor: str) -> KeyAnswer | None:
    """Ask the dead letter's destination about its event id and audit the question; None if it does not exist."""
    with db.reading() as conn:
        state = repository.current_state(conn, dead_letter_id)
    if state is None:
        return None
    # The transaction above is closed: the HTTP call below may take the whole timeout (ADR-004).
    answer = ask_destination(
        DESTINATIONS[state["destination"]].base_url(settings),
        state["event_type"],
        str(state["event_id"]),
        settings.relay.delivery_timeout_s,
    )
    with db.transaction() as tx:
        audit.append(
            tx.conn,
            actor=actor,
            action="dead_letter.key_checked",
            object_type="dead_letter",
            object_id=dead_letter_id,
            details={
                "event_id": str(state["event_id"]),
                "destination": state["destination"],
                "answer": answer.answer,
                "http_status": answer.http_status,
                "detail": answer.detail,
            },
        )
        tx.commit()
    log.info("idempotency key of dead letter %s checked by %s: %s", dead_letter_id, actor, answer.answer)
    return answer
