-- The list of every order (credit and the owner read it, ADR-021): newest first, from an index whatever the
-- history's size.
CREATE INDEX IF NOT EXISTS orders_created_idx ON orders (created_at DESC, id DESC);
