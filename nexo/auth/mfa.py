"""The second factor (ADR-018): TOTP (RFC 6238, PyPI pyotp), its QR code drawn on the server (PyPI segno),
and recovery codes shown once.

A code is good once: the 30 s step it matched is stored and a code of that step or an earlier one is
refused (a code seen over a shoulder cannot be replayed). One step either side of now is accepted,
for phones whose clock drifts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time

import pyotp
import segno

from nexo.auth import sessions, trail
from nexo.auth.service import User
from nexo.db import Database

ISSUER = "Nexo"
RECOVERY_CODES = 10
STEP_S = 30
# The permissions whose holders MFA_REQUIRED=on obliges to enrol (they move money and data).
REQUIRED_FOR = ("dlq.admin", "credit.authorize")


def new_secret() -> str:
    """A fresh TOTP secret (160 bits, base32) for an enrolment in progress."""
    return pyotp.random_base32(32)


def qr_svg(secret: str, username: str) -> str:
    """The otpauth:// URI as an inline SVG QR code (no image fetched from anywhere, CSP-clean)."""
    uri = pyotp.TOTP(secret).provisioning_uri(name=username, issuer_name=ISSUER)
    return segno.make(uri, error="m").svg_inline(scale=5, dark="#000", light="#fff")


def required_for(user: User) -> bool:
    """True when this user's permissions make a second factor mandatory (with MFA_REQUIRED=on)."""
    return any(user.can(p) for p in REQUIRED_FOR)


def _matching_step(secret: str, code: str) -> int | None:
    code = code.strip().replace(" ", "")
    if not (len(code) == 6 and code.isdigit()):
        return None
    totp, now_step = pyotp.TOTP(secret), int(time.time()) // STEP_S
    for step in (now_step - 1, now_step, now_step + 1):
        if hmac.compare_digest(totp.at(step * STEP_S), code):
            return step
    return None


def _code_hash(code: str) -> str:
    return hashlib.sha256(code.strip().lower().replace("-", "").replace(" ", "").encode()).hexdigest()


def new_recovery_code() -> str:
    """80 random bits (ADR-018, migration 0300) as 16 base32 letters in four groups: `abcd-efgh-jkmn-pq23`.

    Not fewer: the codes never expire and are kept as a plain SHA-256, so a copy of the table could be
    searched offline; 2^40 hashes take minutes on one GPU, 2^80 are out of reach. Base32 (RFC 4648) has
    no 0, 1 or 8 to mistake for o, l or b; typed in capitals or without the dashes it still matches.
    """
    letters = base64.b32encode(secrets.token_bytes(10)).decode().lower()
    return "-".join(letters[i : i + 4] for i in range(0, len(letters), 4))


def enrol(db: Database, user: User, secret: str, code: str) -> list[str] | None:
    """Enrol the secret if the code proves the app has it; return the recovery codes (shown once), else None."""
    step = _matching_step(secret, code)
    if step is None:
        return None
    codes = [new_recovery_code() for _ in range(RECOVERY_CODES)]
    with db.transaction() as tx:
        enrolled = tx.execute(
            "UPDATE app_user SET totp_secret = %s, totp_enrolled_at = now(), totp_last_step = %s"
            " WHERE id = %s AND totp_secret IS NULL",
            [secret, step, user.id],
        ).rowcount
        if not enrolled:
            return None  # enrolled meanwhile in another tab
        tx.execute("UPDATE recovery_code SET used_at = now() WHERE user_id = %s AND used_at IS NULL", [user.id])
        for c in codes:
            tx.execute("INSERT INTO recovery_code (user_id, code_sha256) VALUES (%s, %s)", [user.id, _code_hash(c)])
        ended = sessions.end_all_of_user(tx.conn, user.id, "mfa_enrolled", keep=user.session_id)
        trail.record(tx.conn, trail.MFA_ENROLLED, actor=user.username, user_id=user.id, details={"other_sessions_ended": ended})
        tx.commit()
    return codes


def verify_login(db: Database, user_id: int, code: str) -> bool:
    """True when code is the user's current TOTP code (not used before) or one of their unused recovery codes."""
    with db.transaction() as tx:
        row = tx.execute("SELECT totp_secret FROM app_user WHERE id = %s AND active", [user_id]).fetchone()
        if row is None or row["totp_secret"] is None:
            return False
        step = _matching_step(row["totp_secret"], code)
        if step is not None:
            ok = tx.execute(
                "UPDATE app_user SET totp_last_step = %s WHERE id = %s AND (totp_last_step IS NULL OR totp_last_step < %s)",
                [step, user_id, step],
            ).rowcount
        else:
            ok = tx.execute(
                "UPDATE recovery_code SET used_at = now() WHERE user_id = %s AND code_sha256 = %s AND used_at IS NULL",
                [user_id, _code_hash(code)],
            ).rowcount
        tx.commit()
    return ok == 1
