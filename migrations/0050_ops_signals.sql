-- Operations signals (DESIGN guarantee 13, seed "qué mirar en un día malo") that no business table keeps.
--
-- A request_id_reused conflict rolls the order transaction back, and the duration of an order
-- transaction is not a business fact: both are written here, by their own short transactions, so
-- that every process (all gunicorn workers) feeds one history the /ops page and /metrics read.

-- Signal 3: one row per request_id_reused conflict.
CREATE TABLE ops_signal_event (
    id          bigserial PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('request_id_reused')),
    occurred_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ops_signal_event_kind_time_idx ON ops_signal_event (kind, occurred_at);

-- Signal 5: one row per order (reservation) transaction, whatever its outcome. Telemetry, not
-- business data: nexo.ops.recorder deletes samples older than the dashboard can show.
CREATE TABLE order_transaction_sample (
    id          bigserial PRIMARY KEY,
    occurred_at timestamptz NOT NULL,
    seconds     double precision NOT NULL CHECK (seconds >= 0),
    outcome     text NOT NULL
);
CREATE INDEX order_transaction_sample_time_idx ON order_transaction_sample (occurred_at);

-- Signals 1 and 2 read the outbox. Its delivered rows are kept forever while the retention policy is
-- undefined (OUTBOX-RETENTION), so the dashboard must not scan all of history: this partial index
-- holds only the unsettled rows (PENDIENTE, FALLIDO). The recently delivered rows the 24-hour chart
-- needs come from outbox_delivered_idx (migration 0040).
CREATE INDEX outbox_event_unsettled_idx ON outbox_event (destination, created_at) WHERE status <> 'ENTREGADO';
