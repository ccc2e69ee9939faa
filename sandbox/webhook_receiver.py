"""An integration's webhook receiver, sandboxed (ADR-022): POST /hooks takes Nexo's notices.

It is a fake like the fiscal and warehouse ones (sandbox/common.py): one effect per Idempotency-Key,
the same failure modes, and /__sandbox/effects in the order notices were first accepted. It also keeps
every POST as it came — the raw body and the X-Nexo-Signature header, replays included — at
/__sandbox/requests, so a test checks the signature the way an integration would.
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import tempfile
import threading

from flask import Flask, jsonify, request
from werkzeug.serving import make_server

from sandbox.common import Resource, create_fake

REQUESTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS notice_request (
    id        INTEGER PRIMARY KEY,
    key       TEXT,
    signature TEXT,
    body      TEXT NOT NULL
);
"""


def accepted(seq: int, _cancelled: dict | None) -> dict:
    """The receiver's answer to the seq-th notice it accepts."""
    return {"received": seq}


RESOURCES = [Resource("hooks", "notice", accepted)]


def create_receiver(db_path: str) -> Flask:
    """The fake receiver app: the common fake plus the raw requests it got."""
    app = create_fake("webhook_receiver", RESOURCES, db_path)
    lock = threading.Lock()
    conn = sqlite3.connect(db_path + ".requests", isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.executescript(REQUESTS_SCHEMA)

    @app.before_request
    def keep_raw_request():
        if request.method == "POST" and request.path == "/hooks":
            with lock:
                conn.execute(
                    "INSERT INTO notice_request (key, signature, body) VALUES (?, ?, ?)",
                    [
                        request.headers.get("Idempotency-Key"),
                        request.headers.get("X-Nexo-Signature"),
                        request.get_data(as_text=True),
                    ],
                )

    @app.get("/__sandbox/requests")
    def list_requests():
        with lock:
            rows = conn.execute("SELECT key, signature, body FROM notice_request ORDER BY id").fetchall()
        return jsonify([dict(row) for row in rows])

    @app.post("/__sandbox/requests/reset")
    def reset_requests():
        with lock:
            conn.execute("DELETE FROM notice_request")
        return jsonify(status="reset")

    return app


def main() -> None:
    """`python -m sandbox.webhook_receiver --port N [--db PATH]`."""
    parser = argparse.ArgumentParser(description="Sandboxed webhook receiver for Nexo")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--db", help="SQLite file (default: a new temporary file)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s webhook_receiver %(levelname)s %(message)s")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    db_path = args.db or os.path.join(tempfile.mkdtemp(prefix="nexo-webhook-"), "receiver.sqlite3")
    server = make_server(args.host, args.port, create_receiver(db_path), threaded=True)
    logging.getLogger("sandbox.webhook_receiver").info("listening on http://%s:%d", args.host, args.port)
    server.serve_forever()


if __name__ == "__main__":
    main()
