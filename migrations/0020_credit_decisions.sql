-- CU-02 credit decisions: what the database itself keeps true about them.

-- The decided tab lists decisions newest first.
CREATE INDEX IF NOT EXISTS orders_decided_idx ON orders (decided_at DESC) WHERE decided_at IS NOT NULL;

-- A decision always names the officer who took it, and a rejection always says why (the reason is
-- required in the form; this stops any other writer, e.g. a manual SQL fix, from skipping it).
ALTER TABLE orders
    ADD CONSTRAINT orders_decision_names_officer CHECK ((decided_at IS NULL) = (decided_by IS NULL)),
    ADD CONSTRAINT orders_rejection_has_reason
        CHECK (status <> 'RECHAZADO' OR btrim(coalesce(decision_note, '')) <> '');
