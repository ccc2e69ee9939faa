-- Email notifications (README "Email notifications"): each email is a row written in the transaction of
-- the decision that causes it, and sent later by the maintenance runner (nexo/mail/), so a rolled-back
-- decision mails nothing and a committed one loses nothing.

-- Where a person is mailed; NULL: they get no email.
ALTER TABLE app_user ADD COLUMN IF NOT EXISTS email text
    CHECK (email IS NULL OR (length(email) <= 254 AND email ~ '^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$'));

CREATE TABLE IF NOT EXISTS email_message (
    id              bigserial PRIMARY KEY,
    -- One notification to one person, whatever retries or concurrent writers do: the same key is never
    -- queued twice (ON CONFLICT DO NOTHING), and the Message-ID is derived from it.
    dedupe_key      text NOT NULL UNIQUE,
    user_id         bigint REFERENCES app_user(id) ON DELETE SET NULL,
    recipient       text NOT NULL,
    subject         text NOT NULL,
    body            text NOT NULL,
    status          text NOT NULL DEFAULT 'PENDIENTE' CHECK (status IN ('PENDIENTE', 'ENVIADO', 'FALLIDO')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz,
    claim_token     uuid,
    sent_at         timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- The sender's claim: due rows only.
CREATE INDEX IF NOT EXISTS email_message_due_idx ON email_message (next_attempt_at) WHERE status = 'PENDIENTE';

-- Which dead letters the dead-letter admins have been told about (nexo/deadletters/announce.py): a row
-- here and the email rows are written in one transaction, so each dead letter is announced once.
CREATE TABLE IF NOT EXISTS dead_letter_announcement (
    dead_letter_id bigint PRIMARY KEY REFERENCES dead_letter(id) ON DELETE CASCADE,
    announced_at   timestamptz NOT NULL DEFAULT now()
);
