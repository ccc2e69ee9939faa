-- nexo: no-transaction
-- 0600's constraints checked against the existing rows, each VALIDATE in its own statement: it takes a
-- SHARE UPDATE EXCLUSIVE lock, so orders and deliveries go on while the outbox is scanned (ADR-019).
ALTER TABLE outbox_event VALIDATE CONSTRAINT outbox_event_subscription_fk;
ALTER TABLE outbox_event VALIDATE CONSTRAINT outbox_event_event_type_check;
ALTER TABLE outbox_event VALIDATE CONSTRAINT outbox_event_destination_check;
ALTER TABLE outbox_event VALIDATE CONSTRAINT outbox_event_destination_matches_type;
ALTER TABLE dead_letter VALIDATE CONSTRAINT dead_letter_destination_check;
