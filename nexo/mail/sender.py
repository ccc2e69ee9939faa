"""Send due emails through SMTP, outside any transaction, each outcome recorded under its claim token.

The standard library's smtplib and email.message: well kept (they ship with Python and follow its
security fixes), they speak plain SMTP, STARTTLS and implicit TLS with certificate checks, and they are
all a few emails an hour need; a third-party client would add a dependency and nothing Nexo uses.

One pass (send_due) claims one message at a time with a lease (FOR UPDATE SKIP LOCKED, committed before
any network), sends it on a connection kept open for the pass, and records ENVIADO, a retry with backoff,
or FALLIDO, fenced by the claim token so a sender whose lease ran out never overwrites its successor's
outcome. A sender killed after the server accepted a message but before the record leaves it claimed:
the lease expires and the next pass sends it again, under the same Message-ID (at least once; README).
"""

from __future__ import annotations

import hashlib
import logging
import smtplib
import ssl
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, parseaddr

from psycopg.rows import DictRow

from nexo.db import Database
from nexo.mail import repository as repo
from nexo.settings import MailSettings

log = logging.getLogger(__name__)

PASS_LIMIT = 200  # messages per pass at most: a pass ends, and the next one starts within MAIL_POLL_S


@dataclass
class PassCounts:
    """What one pass did."""

    sent: int = 0
    retried: int = 0
    failed: int = 0


def message_id(dedupe_key: str, sender: str) -> str:
    """The Message-ID of a notification: derived from its key, so every resend of it carries the same one."""
    domain = parseaddr(sender)[1].rpartition("@")[2] or "nexo.invalid"
    return f"<{hashlib.sha256(dedupe_key.encode()).hexdigest()[:32]}.nexo@{domain}>"


def build_message(row: DictRow, mail: MailSettings) -> EmailMessage:
    """The email of one row: plain text, UTF-8, marked as automatic (RFC 3834: no out-of-office replies)."""
    msg = EmailMessage()
    msg["From"] = mail.sender
    msg["To"] = row["recipient"]
    msg["Subject"] = row["subject"]
    msg["Message-ID"] = message_id(row["dedupe_key"], mail.sender)
    msg["Date"] = formatdate(usegmt=True)
    msg["Auto-Submitted"] = "auto-generated"
    msg.set_content(row["body"])
    return msg


def backoff_s(attempts: int, mail: MailSettings) -> float:
    """The wait before the next try after `attempts` tries: base × 2^(attempts − 1), at most the cap."""
    return min(mail.backoff_cap_s, mail.backoff_base_s * 2 ** max(0, min(attempts - 1, 30)))


def connect(mail: MailSettings) -> smtplib.SMTP:
    """An SMTP connection as SMTP_URL says, logged in when it names a user; every step bounded by timeout_s."""
    context = ssl.create_default_context()
    server: smtplib.SMTP
    if mail.security == "tls":
        server = smtplib.SMTP_SSL(mail.host, mail.port, timeout=mail.timeout_s, context=context)
    else:
        server = smtplib.SMTP(mail.host, mail.port, timeout=mail.timeout_s)
        if mail.security == "starttls":
            server.starttls(context=context)
    if mail.username:
        server.login(mail.username, mail.password or "")
    return server


def _permanent(exc: Exception) -> bool:
    """A 5xx about this message (its recipient or its content) will not change by trying again; anything
    else (a 4xx, a timeout, a refused connection, a failed login) may, so it is retried."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return all(500 <= code < 600 for code, _ in exc.recipients.values())
    return isinstance(exc, smtplib.SMTPDataError) and 500 <= exc.smtp_code < 600


def _describe(exc: Exception) -> str:
    if isinstance(exc, smtplib.SMTPResponseException):
        text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else str(exc.smtp_error)
        return f"{type(exc).__name__}: {exc.smtp_code} {text}"
    return f"{type(exc).__name__}: {exc}"


def send_due(db: Database, mail: MailSettings, *, stop: threading.Event | None = None, limit: int = PASS_LIMIT) -> PassCounts:
    """Send due emails until none is left, `limit` were tried or `stop` is set; return the counts."""
    counts = PassCounts()
    with db.transaction() as tx:
        counts.failed += repo.fail_spent(tx.conn, max_attempts=mail.max_attempts)
        tx.commit()
    server: smtplib.SMTP | None = None
    try:
        for _ in range(limit):
            if stop is not None and stop.is_set():
                break
            with db.transaction() as tx:
                row = repo.claim_next(tx.conn, lease_s=mail.lease_s, max_attempts=mail.max_attempts)
                tx.commit()
            if row is None:
                break
            error: Exception | None = None
            try:  # no transaction is open here (ADR-004)
                if server is None:
                    server = connect(mail)
                server.send_message(build_message(row, mail))
            except (smtplib.SMTPException, OSError) as exc:
                error = exc
                _drop(server)  # after a failure the conversation's state is unknown: start afresh
                server = None
            _record(db, mail, row, error, counts)
    finally:
        _drop(server, polite=True)
    return counts


def _record(db: Database, mail: MailSettings, row: DictRow, error: Exception | None, counts: PassCounts) -> None:
    spent = False
    with db.transaction() as tx:
        if error is None:
            recorded = repo.mark_sent(tx.conn, row["id"], row["claim_token"])
            counts.sent += 1
        else:
            spent = row["attempts"] >= mail.max_attempts or _permanent(error)
            retry = None if spent else backoff_s(row["attempts"], mail)
            recorded = repo.mark_failed_attempt(tx.conn, row["id"], row["claim_token"], error=_describe(error), retry_in_s=retry)
            if spent:
                counts.failed += 1
            else:
                counts.retried += 1
        tx.commit()
    outcome = "sent" if error is None else ("failed" if spent else "retry")
    log.info(
        "mail id=%s key=%s attempt=%d outcome=%s%s%s",
        row["id"],
        row["dedupe_key"],
        row["attempts"],
        outcome,
        "" if error is None else f" error={_describe(error)!r}",
        "" if recorded else " (lease lost: another sender's outcome stands)",
    )


def _drop(server: smtplib.SMTP | None, *, polite: bool = False) -> None:
    if server is None:
        return
    try:
        if polite:
            server.quit()
        else:
            server.close()
    except (smtplib.SMTPException, OSError):
        server.close()
    return
