-- Transactional outbox (ADR-004), one row per delivery attempt, and durable dead letters (ADR-021).

CREATE TABLE outbox_event (
    id              uuid PRIMARY KEY,          -- also the destination's Idempotency-Key
    aggregate_id    uuid NOT NULL REFERENCES orders(id),
    event_type      text NOT NULL
                    CHECK (event_type IN ('order.handoff_requested', 'billing.intent_recorded')),
    destination     text NOT NULL CHECK (destination IN ('fiscal', 'warehouse')),
    payload         jsonb NOT NULL,
    status          text NOT NULL DEFAULT 'PENDIENTE'
                    CHECK (status IN ('PENDIENTE', 'ENTREGADO', 'FALLIDO')),
    attempts        integer NOT NULL DEFAULT 0, -- every try, the successful one included
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_until    timestamptz,               -- the relay's short lease
    claim_token     uuid,                      -- fences late outcomes from an expired lease
    last_error      text,
    request_id      text,                      -- log correlation with the HTTP request that wrote it
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    CONSTRAINT outbox_event_destination_matches_type CHECK (
        (event_type = 'order.handoff_requested' AND destination = 'warehouse') OR
        (event_type = 'billing.intent_recorded' AND destination = 'fiscal'))
);
CREATE INDEX outbox_pendientes_idx ON outbox_event (next_attempt_at) WHERE status = 'PENDIENTE';
CREATE INDEX outbox_event_aggregate_idx ON outbox_event (aggregate_id);

CREATE TABLE delivery_attempt (
    id           bigserial PRIMARY KEY,
    event_id     uuid NOT NULL REFERENCES outbox_event(id) ON DELETE CASCADE,
    attempt_no   integer NOT NULL,
    claim_token  uuid NOT NULL,
    worker       text NOT NULL,
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    outcome      text CHECK (outcome IN ('ENTREGADO', 'REINTENTO', 'FALLIDO', 'DESCARTADO_POR_LEASE')),
    http_status  integer,
    error        text,
    duration_ms  integer
);
CREATE INDEX delivery_attempt_event_idx ON delivery_attempt (event_id, started_at);

-- ADR-021 adapted: one row each time an event reaches FALLIDO. Kept apart per destination the way
-- ADR-021 keeps them apart per consumer group: every query and purge filters on destination.
CREATE TABLE dead_letter (
    id              bigserial PRIMARY KEY,
    event_id        uuid NOT NULL REFERENCES outbox_event(id) ON DELETE CASCADE,
    destination     text NOT NULL CHECK (destination IN ('fiscal', 'warehouse')),
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'resolved', 'discarded')),
    attempts        integer NOT NULL,
    last_error      text,
    http_status     integer,
    error_signature text NOT NULL,             -- destination + error class / HTTP status
    first_failed_at timestamptz NOT NULL,
    last_failed_at  timestamptz NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    resolved_at     timestamptz,
    resolved_by     text,
    resolution_note text,
    -- a terminal dead letter always has its resolution time (retention relies on it)
    CONSTRAINT dead_letter_terminal_has_time CHECK (status = 'pending' OR resolved_at IS NOT NULL)
);
CREATE UNIQUE INDEX dead_letter_one_pending_per_event ON dead_letter (event_id) WHERE status = 'pending';
CREATE INDEX dead_letter_destination_status_idx ON dead_letter (destination, status, created_at DESC);
