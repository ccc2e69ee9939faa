-- Issue 14: every request path stays an index lookup as the history grows (about a million orders,
-- two million delivered events and a hundred thousand dead letters after three years).
-- tests/integration/test_query_plans.py EXPLAINs each page's statements on grown data and fails on a
-- sequential scan of a big table; each index below answers one statement it found.

-- Dead-letter list (newest failure first): over both destinations, the default view …
CREATE INDEX IF NOT EXISTS dead_letter_last_failed_idx ON dead_letter (last_failed_at DESC, id DESC);
-- … and narrowed to one destination, with or without a status (ADR-021's per-destination isolation).
CREATE INDEX IF NOT EXISTS dead_letter_destination_failed_idx
    ON dead_letter (destination, status, last_failed_at DESC, id DESC);
-- /ops rebuilds the last 24 hours of the oldest pending event's age; only events whose dead letter
-- opened in that window can have been pending then and FALLIDO now (nexo/ops/queries.py).
CREATE INDEX IF NOT EXISTS dead_letter_created_idx ON dead_letter (created_at);

-- A client's orders: the dead-letter list's client filter (and any client history page).
CREATE INDEX IF NOT EXISTS orders_client_idx ON orders (client_id, created_at DESC);

-- The order form's SKU lookup: a few letters of the SKU or of the first word of the name, by prefix.
-- text_pattern_ops makes LIKE 'abc%' an index range whatever the database's collation.
CREATE INDEX IF NOT EXISTS product_sku_prefix_idx ON product (sku text_pattern_ops);
CREATE INDEX IF NOT EXISTS product_name_prefix_idx ON product (lower(name) text_pattern_ops);

-- FALLIDO events per destination (/ops and /metrics signal 2, the warehouse page): a discarded dead
-- letter leaves its event FALLIDO for good, so these add up over the years; an index-only count of
-- them alone instead of a read of every unsettled row.
CREATE INDEX IF NOT EXISTS outbox_failed_idx ON outbox_event (destination) WHERE status = 'FALLIDO';
