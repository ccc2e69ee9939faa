-- Webhooks for integrations (ADR-022): an API key registers a URL and the order events it wants; each
-- notice is an outbox event of destination 'webhook', so it is leased, retried with backoff, failed
-- into a dead letter and replayed like an invoice or a handoff.
CREATE TABLE webhook_subscription (
    id          bigserial PRIMARY KEY,
    api_key_id  bigint NOT NULL REFERENCES api_key(id),
    url         text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    events      text[] NOT NULL CHECK (cardinality(events) > 0 AND events <@ ARRAY[
                    'order.confirmed', 'order.pending_authorization', 'order.approved', 'order.rejected',
                    'order.cancelled', 'order.dispatched', 'order.invoiced']::text[]),
    -- The HMAC key of X-Nexo-Signature. Kept in clear because signing needs it (as Stripe and Frappe do);
    -- shown once, when the subscription is created.
    secret      text NOT NULL CHECK (length(secret) >= 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX webhook_subscription_live_idx ON webhook_subscription (api_key_id) WHERE revoked_at IS NULL;

-- The subscription a notice goes to. NOT VALID: the existing rows are all NULL, and validating would scan
-- the whole outbox under this migration's lock (0601 validates without blocking writes).
ALTER TABLE outbox_event ADD COLUMN subscription_id bigint;
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_subscription_fk
    FOREIGN KEY (subscription_id) REFERENCES webhook_subscription(id) NOT VALID;
-- A subscription's notices about one order, in order: the newest is the one the next depends on.
CREATE INDEX outbox_event_subscription_idx ON outbox_event (subscription_id, aggregate_id) WHERE subscription_id IS NOT NULL;

ALTER TABLE outbox_event DROP CONSTRAINT outbox_event_event_type_check;
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_event_type_check CHECK (event_type IN (
    'order.handoff_requested', 'billing.intent_recorded', 'order.handoff_cancelled', 'billing.intent_cancelled',
    'webhook.notice')) NOT VALID;
ALTER TABLE outbox_event DROP CONSTRAINT outbox_event_destination_check;
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_destination_check
    CHECK (destination IN ('fiscal', 'warehouse', 'webhook')) NOT VALID;
ALTER TABLE outbox_event DROP CONSTRAINT outbox_event_destination_matches_type;
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_destination_matches_type CHECK (
    (event_type IN ('order.handoff_requested', 'order.handoff_cancelled') AND destination = 'warehouse') OR
    (event_type IN ('billing.intent_recorded', 'billing.intent_cancelled') AND destination = 'fiscal') OR
    (event_type = 'webhook.notice' AND destination = 'webhook' AND subscription_id IS NOT NULL)) NOT VALID;
ALTER TABLE dead_letter DROP CONSTRAINT dead_letter_destination_check;
ALTER TABLE dead_letter ADD CONSTRAINT dead_letter_destination_check
    CHECK (destination IN ('fiscal', 'warehouse', 'webhook')) NOT VALID;
