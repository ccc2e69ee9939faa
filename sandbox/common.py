"""The machinery both sandboxed fakes share: SQLite storage, Idempotency-Key dedup and failure modes.

A fake is a small Flask app in its own process with its own SQLite file. It applies an effect at most
once per Idempotency-Key (same key and body → the stored answer again; same key, other body → 422),
and can be told to misbehave the way the provider-down scenario (ADR-008) needs: time out before or
after applying the effect, answer a transient 5xx or a permanent 4xx — for the next N requests or
until changed —,
and answer the ways of sandbox/modes.py (NUL bytes, a dribbled body, endless headers, 20 MB, silence).
Nothing in nexo/ imports this package: Nexo only ever reaches a fake over HTTP.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import json
import logging
import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from flask import Flask, jsonify, request
from werkzeug.serving import make_server

from sandbox.modes import EXTRA_MODES, Mode, ModeSwitch, misbehave, parse_mode

SCHEMA = """
CREATE TABLE IF NOT EXISTS effect (
    key          TEXT PRIMARY KEY,
    body_hash    TEXT NOT NULL,
    payload      TEXT NOT NULL,
    result       TEXT NOT NULL,
    applied_at   TEXT NOT NULL,
    deliveries   INTEGER NOT NULL DEFAULT 1   -- POSTs with this key and body, replays included
);
CREATE TABLE IF NOT EXISTS counter (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
-- Each apply reads max(applied_at) (Store._next_moment): without it that read scanned every effect, and a
-- fake's CPU per effect grew with its history (1.8 ms at the bench's start, 4.6 ms some thousands later,
-- on the cores the relay shares).
CREATE INDEX IF NOT EXISTS effect_applied_at ON effect (applied_at);
"""
# Added after the first stores were written (kept in NEXO_DATA_DIR across restarts): the kind of effect,
# `handoff` or `invoice` for every row written before cancellations existed.
KIND_COLUMN = "ALTER TABLE effect ADD COLUMN kind TEXT NOT NULL DEFAULT '{default}'"


@dataclass(frozen=True)
class Resource:
    """One thing a fake applies: POSTed to /<path>, listed as `kind`; `cancels` names the field of the body
    that carries the key of the effect it undoes (a cancellation: that key must have been applied here)."""

    path: str
    kind: str
    make_result: Callable[[int, dict | None], dict]  # (its sequence number, the effect it cancels or None)
    cancels: str | None = None


class Store:
    """Applied effects in SQLite: one connection behind a lock, so two requests racing on a key serialise."""

    def __init__(self, path: str, default_kind: str):
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        self._conn.row_factory = sqlite3.Row
        # WAL + synchronous=NORMAL survive the fake's own crash (what tests do to it) without an fsync per
        # request; a connection per request made each POST cost tens of milliseconds (checkpoint on close).
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(SCHEMA)
        columns = {row["name"] for row in self._conn.execute("PRAGMA table_info(effect)")}
        if "kind" not in columns:
            self._conn.execute(KIND_COLUMN.format(default=default_kind))

    def apply(self, key: str, payload: dict, resource: Resource, counter: str) -> tuple[int, dict]:
        """Apply the effect once per key: (201, result) first and on replays, (422, error) on a body mismatch
        or, for a cancellation, when the effect it names was never applied here (a permanent refusal)."""
        body_hash = _hash(payload)
        with self._lock, self._transaction() as conn:
            row = conn.execute("SELECT body_hash, result FROM effect WHERE key = ?", [key]).fetchone()
            if row is not None:
                if row["body_hash"] != body_hash:
                    return 422, {"error": "idempotency_key_reused", "detail": "esta Idempotency-Key ya se usó con otro contenido"}
                conn.execute("UPDATE effect SET deliveries = deliveries + 1 WHERE key = ?", [key])
                return 201, json.loads(row["result"])
            cancelled = None
            if resource.cancels is not None:
                original = conn.execute(
                    "SELECT result FROM effect WHERE key = ?", [str(payload.get(resource.cancels))]
                ).fetchone()
                if original is None:
                    return 422, {"error": "original_not_applied", "detail": "no se aplicó ningún efecto con esa clave"}
                cancelled = json.loads(original["result"])
            conn.execute(
                "INSERT INTO counter (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1", [counter]
            )
            seq = conn.execute("SELECT value FROM counter WHERE name = ?", [counter]).fetchone()["value"]
            result = resource.make_result(seq, cancelled)
            conn.execute(
                "INSERT INTO effect (key, body_hash, payload, result, applied_at, kind) VALUES (?, ?, ?, ?, ?, ?)",
                [key, body_hash, json.dumps(payload), json.dumps(result), self._next_moment(conn), resource.kind],
            )
            return 201, result

    @staticmethod
    def _next_moment(conn: sqlite3.Connection) -> str:
        # The list of effects is in the order they were applied, and applied_at never goes backwards in
        # it, even if the wall clock does (a test checks a cancellation came after its original).
        last = conn.execute("SELECT max(applied_at) AS last FROM effect").fetchone()["last"]
        now = _now()
        return now if last is None or now > last else last

    def get(self, key: str) -> dict | None:
        """The stored effect for a key, or None when that key was never applied."""
        with self._lock:
            row = self._conn.execute("SELECT * FROM effect WHERE key = ?", [key]).fetchone()
        return _effect(row) if row else None

    def effects(self) -> list[dict]:
        """Every applied effect, oldest first."""
        with self._lock:
            rows = self._conn.execute("SELECT * FROM effect ORDER BY rowid").fetchall()
        return [_effect(r) for r in rows]

    def reset(self) -> None:
        """Forget every effect and restart numbering (tests only)."""
        with self._lock, self._transaction() as conn:
            conn.execute("DELETE FROM effect")
            conn.execute("DELETE FROM counter")

    @contextlib.contextmanager
    def _transaction(self):
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")


def _effect(row: sqlite3.Row) -> dict:
    return {
        "kind": row["kind"],
        "key": row["key"],
        "payload": json.loads(row["payload"]),
        "result": json.loads(row["result"]),
        "applied_at": row["applied_at"],
        "deliveries": row["deliveries"],
    }


def _hash(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _now() -> str:
    # One reading of the clock for the seconds and the microseconds: two readings straddling a second
    # would write a moment up to a second early.
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1e6) % 1_000_000:06d}Z"


def create_fake(name: str, resources: list[Resource], db_path: str) -> Flask:
    """A fake destination app: POST /<path> and GET /<path>/<key> per resource, and the /__sandbox endpoints.

    The first resource is the original effect (an invoice, a handoff); the others cancel one (a credit
    note, a handoff cancellation). Every POST of the fake obeys its current mode.
    """
    app = Flask(name)
    store = Store(db_path, default_kind=resources[0].kind)
    modes = ModeSwitch()
    log = logging.getLogger(f"sandbox.{name}")

    def apply_effect(resource: Resource, counter: str):
        key = (request.headers.get("Idempotency-Key") or "").strip()
        if not key:
            return jsonify(error="idempotency_key_required"), 400
        payload = request.get_json(silent=True)
        if not isinstance(payload, dict):
            return jsonify(error="json_object_required"), 400
        if resource.cancels is not None and not isinstance(payload.get(resource.cancels), str):
            return jsonify(error="original_key_required", detail=f"falta {resource.cancels}"), 400
        mode = modes.take()
        log.info("%s key=%s mode=%s", resource.path, key, mode.name)
        if mode.name == "error_5xx":
            return jsonify(error="servicio_no_disponible"), 503
        if mode.name == "error_4xx":
            return jsonify(error="solicitud_rechazada", detail="el destino rechazó el contenido"), 400
        if mode.name in EXTRA_MODES:
            return misbehave(mode, lambda: store.apply(key, payload, resource, counter))
        if mode.name == "slow":
            time.sleep(mode.delay_s)  # then as ok: another request may have overtaken this one meanwhile
        if mode.name == "timeout_before":
            time.sleep(mode.delay_s)  # the caller gave up long ago; nothing was applied
            return jsonify(error="tiempo_agotado"), 504
        status, body = store.apply(key, payload, resource, counter)
        if mode.name == "timeout_after":
            time.sleep(mode.delay_s)  # applied, but the answer arrives after the caller's timeout
        return jsonify(body), status

    def show_effect(key: str):
        effect = store.get(key)
        if effect is None:
            return jsonify(error="no_aplicada", key=key), 404
        return jsonify(effect)

    for index, resource in enumerate(resources):
        # The original's numbering keeps its counter's first name, so stores kept across restarts go on.
        counter = "seq" if index == 0 else f"seq:{resource.kind}"
        app.add_url_rule(
            f"/{resource.path}", f"apply_{resource.kind}", functools.partial(apply_effect, resource, counter), methods=["POST"]
        )
        app.add_url_rule(f"/{resource.path}/<key>", f"show_{resource.kind}", show_effect, methods=["GET"])

    @app.get("/__sandbox/effects")
    def list_effects():
        return jsonify(store.effects())

    @app.get("/__sandbox/mode")
    def show_mode():
        return jsonify(_describe(modes.get()))

    @app.post("/__sandbox/mode")
    def change_mode():
        mode = parse_mode(request.get_json(silent=True) or {})
        if isinstance(mode, str):
            return jsonify(error=mode), 400
        modes.set(mode)
        return jsonify(_describe(mode))

    @app.post("/__sandbox/reset")
    def reset():
        store.reset()
        modes.set(Mode())
        return jsonify(status="reset")

    @app.get("/__sandbox/health")
    def health():
        return jsonify(status="ok", fake=name)

    return app


def _describe(mode: Mode) -> dict:
    described = {"mode": mode.name, "times": mode.times, "delay_s": mode.delay_s}
    if mode.name in EXTRA_MODES:
        described.update(interval_s=mode.interval_s, size_bytes=mode.size_bytes, status=mode.status)
    return described


def serve(name: str, resources: list[Resource]) -> None:
    """Command-line entry point: `python -m sandbox.<name> --port N [--db PATH]`."""
    parser = argparse.ArgumentParser(description=f"Sandboxed {name} fake for Nexo")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--db", help="SQLite file (default: a new temporary file)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {name} %(levelname)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    db_path = args.db or os.path.join(tempfile.mkdtemp(prefix=f"nexo-{name}-"), f"{name}.sqlite3")
    app = create_fake(name, resources, db_path)
    server = make_server(args.host, args.port, app, threaded=True)
    logging.getLogger(f"sandbox.{name}").info("listening on http://%s:%d (storage %s)", args.host, args.port, db_path)
    server.serve_forever()
