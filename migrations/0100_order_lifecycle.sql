-- An order's whole life (guarantee 19): cancelled, dispatched, paid for; stock and credit that go both
-- ways and always add up. And the order of an order's effects at each destination (guarantee 20,
-- ADR-017): a cancellation never reaches a destination before the effect it cancels.

-- Order states: ANULADO (cancelled before anything left), DESPACHADO_PARCIAL / DESPACHADO (goods left
-- the warehouse); the invoice of a cancelled order ends ANULADA once its credit note is issued.
ALTER TABLE orders DROP CONSTRAINT orders_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_status_check CHECK (status IN (
    'CONFIRMADO', 'PENDIENTE_AUTORIZACION', 'RECHAZADO', 'ANULADO', 'DESPACHADO_PARCIAL', 'DESPACHADO'));
ALTER TABLE orders DROP CONSTRAINT orders_billing_status_check;
ALTER TABLE orders ADD CONSTRAINT orders_billing_status_check CHECK (billing_status IN (
    'NO_APLICA', 'PENDIENTE_FACTURACION', 'FACTURADO', 'ANULADA'));

ALTER TABLE orders
    -- What the order added to its client's exposure (RN-01): its total once confirmed (at entry or by
    -- credit), 0 while it waits or if it never was. A cancel gives back exactly this much.
    ADD COLUMN charged_cents      bigint NOT NULL DEFAULT 0 CHECK (charged_cents >= 0),
    ADD COLUMN cancelled_at       timestamptz,
    ADD COLUMN cancelled_by       bigint REFERENCES app_user(id),
    ADD COLUMN cancel_reason      text,
    ADD COLUMN credit_note_number text,         -- the fiscal provider's credit note for the invoice
    ADD CONSTRAINT orders_cancel_is_complete CHECK (
        (status = 'ANULADO') = (cancelled_at IS NOT NULL)
        AND (cancelled_at IS NULL OR (cancelled_by IS NOT NULL AND btrim(coalesce(cancel_reason, '')) <> '')));
UPDATE orders SET charged_cents = total_cents WHERE status = 'CONFIRMADO';

-- The client's exposure is its opening balance plus what its orders charged, minus what it paid and
-- what cancels gave back; the opening balance is what it owed before Nexo knew of its orders.
-- A client that paid for an order later cancelled has a credit balance ("saldo a favor"): its exposure
-- goes below zero, and its next orders use it. Refunding it is the business's decision (docs/unknowns.md);
-- what must hold is that exposure adds up (nexo/books.py), so the old floor of zero goes.
ALTER TABLE client DROP CONSTRAINT client_exposure_cents_check;

-- A new client opens with the exposure it is created with.
ALTER TABLE client ADD COLUMN opening_exposure_cents bigint;
UPDATE client c SET opening_exposure_cents = c.exposure_cents - coalesce(
    (SELECT sum(o.charged_cents) FROM orders o WHERE o.client_id = c.id), 0);
ALTER TABLE client ALTER COLUMN opening_exposure_cents SET NOT NULL;
CREATE FUNCTION client_opening() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.opening_exposure_cents := coalesce(NEW.opening_exposure_cents, NEW.exposure_cents);
    RETURN NEW;
END $$;
CREATE TRIGGER client_opening BEFORE INSERT ON client FOR EACH ROW EXECUTE FUNCTION client_opening();

-- A reservation holds `quantity - dispatched` units while released_at is NULL; released_at is set when
-- it stops holding: rejected, cancelled, or fully dispatched.
ALTER TABLE stock_reservation
    ADD COLUMN dispatched integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT stock_reservation_dispatched_range CHECK (dispatched >= 0 AND dispatched <= quantity);

-- on_hand = opening_on_hand - what was dispatched: a shipment is the only thing in Nexo that moves
-- goods out. A new stock row opens with what it has; a manual adjustment shows in `flask check`.
ALTER TABLE stock_level ADD COLUMN opening_on_hand integer;
UPDATE stock_level SET opening_on_hand = on_hand;
ALTER TABLE stock_level ALTER COLUMN opening_on_hand SET NOT NULL;
CREATE FUNCTION stock_level_opening() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.opening_on_hand := coalesce(NEW.opening_on_hand, NEW.on_hand);
    RETURN NEW;
END $$;
CREATE TRIGGER stock_level_opening BEFORE INSERT ON stock_level
    FOR EACH ROW EXECUTE FUNCTION stock_level_opening();

-- What left the warehouse: one shipment per dispatch, its lines per product. An integration's retried
-- shipment is applied once (its Idempotency-Key, with the request's hash).
CREATE TABLE shipment (
    id              uuid PRIMARY KEY,
    order_id        uuid NOT NULL REFERENCES orders(id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      bigint NOT NULL REFERENCES app_user(id),
    api_key_id      bigint REFERENCES api_key(id),
    idempotency_key uuid UNIQUE,
    request_hash    text,
    CHECK ((idempotency_key IS NULL) = (request_hash IS NULL))
);
CREATE INDEX shipment_order_idx ON shipment (order_id, created_at);
CREATE TABLE shipment_line (
    shipment_id  uuid NOT NULL REFERENCES shipment(id),
    product_id   uuid NOT NULL REFERENCES product(id),
    warehouse_id text NOT NULL REFERENCES warehouse(id),
    sku          text NOT NULL,
    quantity     integer NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (shipment_id, product_id)
);
CREATE INDEX shipment_line_stock_idx ON shipment_line (product_id, warehouse_id);

-- What a client paid: it lowers the exposure once (an accounting system's retried payment too).
CREATE TABLE payment (
    id              uuid PRIMARY KEY,
    client_id       uuid NOT NULL REFERENCES client(id),
    amount_cents    bigint NOT NULL CHECK (amount_cents > 0),
    reference       text NOT NULL CHECK (btrim(reference) <> ''),
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      bigint NOT NULL REFERENCES app_user(id),
    api_key_id      bigint REFERENCES api_key(id),
    idempotency_key uuid UNIQUE,
    request_hash    text,
    CHECK ((idempotency_key IS NULL) = (request_hash IS NULL))
);
CREATE INDEX payment_client_idx ON payment (client_id, created_at DESC);

-- Who may cancel any order (the order's own salesperson always may) and read a client's account: credit
-- and the owner. Who records what left the warehouse: the warehouse.
INSERT INTO permission (name, description) VALUES
    ('orders.cancel',      'Anular cualquier pedido que todavía no salió del depósito'),
    ('clients.view',       'Ver la cuenta de un cliente: límite, deuda, pagos y pedidos abiertos'),
    ('warehouse.dispatch', 'Registrar lo que sale del depósito');
INSERT INTO role_permission (role_name, permission_name) VALUES
    ('credito',  'orders.cancel'),
    ('dueno',    'orders.cancel'),
    ('credito',  'clients.view'),
    ('dueno',    'clients.view'),
    ('deposito', 'warehouse.dispatch');

-- Compensating events (ADR-017): a cancellation goes to the destination that received the original,
-- and names it (`depends_on`): it is not claimed while its original can still be on its way there.
-- An original that never left is withdrawn (RETIRADO) with its order's cancel, and so is a
-- cancellation whose original the destination never applied: that destination sees neither.
ALTER TABLE outbox_event DROP CONSTRAINT outbox_event_event_type_check;
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_event_type_check CHECK (event_type IN (
    'order.handoff_requested', 'billing.intent_recorded', 'order.handoff_cancelled', 'billing.intent_cancelled'));
ALTER TABLE outbox_event DROP CONSTRAINT outbox_event_destination_matches_type;
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_destination_matches_type CHECK (
    (event_type IN ('order.handoff_requested', 'order.handoff_cancelled') AND destination = 'warehouse') OR
    (event_type IN ('billing.intent_recorded', 'billing.intent_cancelled') AND destination = 'fiscal'));
ALTER TABLE outbox_event DROP CONSTRAINT outbox_event_status_check;
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_status_check
    CHECK (status IN ('PENDIENTE', 'ENTREGADO', 'FALLIDO', 'RETIRADO'));
ALTER TABLE outbox_event
    ADD COLUMN depends_on uuid REFERENCES outbox_event(id),
    ADD COLUMN withdrawn_at timestamptz;
CREATE INDEX outbox_event_depends_on_idx ON outbox_event (depends_on) WHERE depends_on IS NOT NULL;
ALTER TABLE delivery_attempt DROP CONSTRAINT delivery_attempt_outcome_check;
ALTER TABLE delivery_attempt ADD CONSTRAINT delivery_attempt_outcome_check CHECK (outcome IN (
    'ENTREGADO', 'REINTENTO', 'FALLIDO', 'DESCARTADO_POR_LEASE', 'SIN_RESULTADO', 'RETIRADO'));
