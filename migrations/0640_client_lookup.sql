-- nexo: no-transaction
-- The order form's client lookup (past 500 clients, CONTRACT.md) finds names containing what was typed
-- (nexo/orders/queries.py, find_clients). Walking the name index and filtering answers a common word at
-- once, but a rare one read the whole table: "Cliente 004242" among 100,000 clients, a sequential scan of
-- 124 ms on this machine's PostgreSQL 15; 3.5 ms through a trigram index, which answers "contains" for
-- any word of three letters or more (pg_trgm, migration 0630; one or two letters still scan). Built
-- CONCURRENTLY so that order entry never waits for it (ADR-019).
CREATE INDEX CONCURRENTLY IF NOT EXISTS client_name_search_idx ON client USING gin (name gin_trgm_ops);
