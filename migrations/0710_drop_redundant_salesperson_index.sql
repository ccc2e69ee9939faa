-- nexo: no-transaction
-- orders_salesperson_idx (salesperson_id, created_at DESC) is a prefix of orders_salesperson_keyset_idx
-- (salesperson_id, created_at DESC, id DESC, migration 0070): every read it served, the other serves, and
-- every order paid for keeping both (bench/create_order_alone.py, docs/performance.md "The lifecycle's
-- budget"). Dropped CONCURRENTLY so the upgrade never blocks order entry (ADR-019).
DROP INDEX CONCURRENTLY IF EXISTS orders_salesperson_idx;
