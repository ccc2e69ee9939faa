-- A replayed dead letter starts a fresh delivery cycle (issue 6) while `attempts` keeps counting every
-- try (CONTRACT.md). The relay's max-attempts budget and backoff count from here.
ALTER TABLE outbox_event
    ADD COLUMN cycle_started_attempts integer NOT NULL DEFAULT 0
        CHECK (cycle_started_attempts >= 0);
