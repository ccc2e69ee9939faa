-- Order numbers people can say over the phone (ADR-020): P-000123, from a sequence; the UUID stays the id.
-- Existing orders are numbered by their creation time. A sequence never gives a number back, so an
-- order refused inside its transaction (stock short) leaves a gap: the number names an order, it is
-- not a fiscal document and no one counts on it having no holes.
CREATE SEQUENCE IF NOT EXISTS order_number_seq AS bigint;

ALTER TABLE orders ADD COLUMN IF NOT EXISTS number bigint;

UPDATE orders o SET number = numbered.n
  FROM (SELECT id, nextval('order_number_seq') AS n
          FROM (SELECT id FROM orders WHERE number IS NULL ORDER BY created_at, id) AS oldest_first) AS numbered
 WHERE o.id = numbered.id;

ALTER TABLE orders ALTER COLUMN number SET DEFAULT nextval('order_number_seq'),
                   ALTER COLUMN number SET NOT NULL;
ALTER SEQUENCE order_number_seq OWNED BY orders.number;

CREATE UNIQUE INDEX IF NOT EXISTS orders_number_key ON orders (number);
