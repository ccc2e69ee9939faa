-- nexo: no-transaction
-- Finding any order (ADR-020): the list's status and SKU filters read from indexes on the grown database,
-- built CONCURRENTLY so that an upgrade never blocks order entry (ADR-019).
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_status_keyset_idx ON orders (status, created_at DESC, id DESC);
CREATE INDEX CONCURRENTLY IF NOT EXISTS order_line_sku_idx ON order_line (sku, order_id);
