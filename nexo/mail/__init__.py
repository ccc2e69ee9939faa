"""Email notifications (README "Email notifications"): queued in the deciding transaction, sent later.

Off unless SMTP_URL is set (Settings.mail). A use case that decides something a person should hear about
writes the email as an `email_message` row in its own transaction (queue.py), so a decision that rolls
back mails nothing and a committed one cannot lose its email; the maintenance runner sends due rows
outside any transaction (sender.py), with a lease, a fenced outcome, backoff and a last FALLIDO state,
like the outbox's relay (ADR-004, guarantee 9). Delivery is at least once: a sender killed between the
SMTP server's 250 and the record sends again, under the same Message-ID, so a reader's mail program (and
the tests) can tell a resend from a second notification.

What each email says is written by the package that decides (nexo/orders, nexo/credit,
nexo/deadletters): this package knows rows and SMTP, never orders.
"""
