-- nexo: no-transaction
-- The order form's client lookup reads like the SKU lookup (CONTRACT.md: "a lookup like the SKU one"):
-- every word typed, in any order, whatever the case and the accents ("corralon sur" finds "Corralón del
-- Sur"; migration 0640's index matched the name as typed, accents included). The compared text is
-- stored, as the catalog's is (migration 0630 says why), and indexed by trigrams, so a rare word still
-- reads only the clients that hold it (nexo/orders/queries.py, find_clients). Adding the column rewrites
-- the client table once, under a lock order entry waits for (0.65 s at 100,000 clients on PostgreSQL 15
-- here; the index then 0.8 s, without a lock). At 100,000 clients a rare word ("004242", "corralon sur")
-- is answered in 0.1 ms through the index, a common one ("cliente") by walking the names in order.
ALTER TABLE client ADD COLUMN IF NOT EXISTS search_text text GENERATED ALWAYS AS (searchable(name)) STORED;
-- Built CONCURRENTLY: order entry never waits for it (ADR-019).
CREATE INDEX CONCURRENTLY IF NOT EXISTS client_search_idx ON client USING gin (search_text gin_trgm_ops);
-- Migration 0640's index on the raw name: nothing reads it any more.
DROP INDEX CONCURRENTLY IF EXISTS client_name_search_idx;
