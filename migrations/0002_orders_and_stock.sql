-- Orders, stock and reservations (ADR-002) and the idempotency keys of ADR-005/006.

CREATE TABLE orders (
    id              uuid PRIMARY KEY,
    client_id       uuid NOT NULL REFERENCES client(id),
    warehouse_id    text NOT NULL REFERENCES warehouse(id),
    salesperson_id  bigint NOT NULL REFERENCES app_user(id),
    status          text NOT NULL
                    CHECK (status IN ('CONFIRMADO', 'PENDIENTE_AUTORIZACION', 'RECHAZADO')),
    total_cents     bigint NOT NULL CHECK (total_cents >= 0),
    billing_status  text NOT NULL DEFAULT 'NO_APLICA'
                    CHECK (billing_status IN ('NO_APLICA', 'PENDIENTE_FACTURACION', 'FACTURADO')),
    delivery_method text,                      -- carried, not fingerprinted (ADR-006 open question)
    invoice_number  text,                      -- set when the fiscal provider answers
    handoff_ticket  text,                      -- set when the warehouse answers
    created_at      timestamptz NOT NULL DEFAULT now(),
    decided_at      timestamptz,               -- CU-02 decision, when the order waited for credit
    decided_by      bigint REFERENCES app_user(id),
    decision_note   text
);
CREATE INDEX orders_salesperson_idx ON orders (salesperson_id, created_at DESC);
CREATE INDEX orders_pending_idx ON orders (created_at) WHERE status = 'PENDIENTE_AUTORIZACION';

CREATE TABLE order_line (
    order_id         uuid NOT NULL REFERENCES orders(id),
    product_id       uuid NOT NULL REFERENCES product(id),
    sku              text NOT NULL,
    quantity         integer NOT NULL CHECK (quantity > 0),
    unit_price_cents bigint NOT NULL CHECK (unit_price_cents > 0),  -- RN-03: copied from price_list
    PRIMARY KEY (order_id, product_id)
);

-- ADR-002: the CHECK is what stops a writer that skips the conditional UPDATE (the Friday
-- stock-count script runs plain SQL against this table).
CREATE TABLE stock_level (
    product_id   uuid NOT NULL REFERENCES product(id),
    warehouse_id text NOT NULL REFERENCES warehouse(id),
    on_hand      integer NOT NULL CHECK (on_hand >= 0),
    reserved     integer NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    PRIMARY KEY (product_id, warehouse_id),
    CONSTRAINT disponible_no_negativo CHECK (on_hand - reserved >= 0)
);

CREATE TABLE stock_reservation (
    order_id     uuid NOT NULL REFERENCES orders(id),
    product_id   uuid NOT NULL REFERENCES product(id),
    warehouse_id text NOT NULL REFERENCES warehouse(id),
    quantity     integer NOT NULL CHECK (quantity > 0),
    kind         text NOT NULL CHECK (kind IN ('BLANDA', 'FIRME')),
    -- RN-07 is BLOCKED: nobody has decided how long a soft reservation may hold stock. This stays
    -- NULL on purpose; no default deadline is invented here (see docs/unknowns.md).
    expires_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    released_at  timestamptz,                  -- set when a rejected order gives the units back
    PRIMARY KEY (order_id, product_id, warehouse_id)
);
CREATE INDEX stock_reservation_soft_idx ON stock_reservation (created_at)
    WHERE kind = 'BLANDA' AND released_at IS NULL;

-- ADR-005: one row per salesperson intent. Claimed inside the order transaction, so a business
-- rejection rolls it back and a retry is evaluated again.
CREATE TABLE idempotency_keys (
    request_id          uuid PRIMARY KEY,
    request_hash        text NOT NULL,                   -- ADR-006 fingerprint
    fingerprint_version smallint NOT NULL DEFAULT 1,
    order_id            uuid REFERENCES orders(id),
    created_at          timestamptz NOT NULL DEFAULT now()
);
