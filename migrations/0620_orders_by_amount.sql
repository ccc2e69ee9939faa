-- nexo: no-transaction
-- Sorting the order list by amount (ADR-020): the keyset over (total_cents, id) reads an index, forwards for
-- one direction and backwards for the other, for every order (credit, the owner) and for one salesperson's
-- own list; built CONCURRENTLY so that an upgrade never blocks order entry (ADR-019).
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_total_keyset_idx ON orders (total_cents DESC, id DESC);
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_salesperson_total_idx ON orders (salesperson_id, total_cents DESC, id DESC);
