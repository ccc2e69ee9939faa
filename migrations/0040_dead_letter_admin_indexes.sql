-- Indexes for the dead-letter admin pages and the retention job (issue 6, ADR-010).
-- Every one leads with destination: queries are always scoped to one destination (ADR-021's per-group
-- isolation), so no page, bulk action or purge ever scans the other destination's rows.

-- Groups page and bulk preview: pending dead letters of one destination, by error signature.
CREATE INDEX IF NOT EXISTS dead_letter_pending_signature_idx
    ON dead_letter (destination, error_signature, last_failed_at DESC) WHERE status = 'pending';

-- Retention: terminal dead letters of one destination, oldest resolution first.
CREATE INDEX IF NOT EXISTS dead_letter_terminal_resolved_idx
    ON dead_letter (destination, resolved_at) WHERE status <> 'pending';

-- The detail page lists every dead letter an event ever had; the outbox purge skips events that still have one.
CREATE INDEX IF NOT EXISTS dead_letter_event_idx ON dead_letter (event_id);

-- Outbox retention (only when OUTBOX_RETENTION_DAYS is set): delivered events of one destination by age.
CREATE INDEX IF NOT EXISTS outbox_delivered_idx
    ON outbox_event (destination, delivered_at) WHERE status = 'ENTREGADO';
