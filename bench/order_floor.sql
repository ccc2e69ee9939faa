-- The floor of an order (docs/performance.md, "The floor"): what create_order sends to Postgres, with no
-- Python in between. pgbench -M prepared runs it (psycopg prepares a statement after its fifth use too);
-- bench/floor.py loads the pick tables and gives the -D constants. The statements between BEGIN and
-- COMMIT are create_order's own SQL, parameters aside: tests/integration/test_bench_floor.py fails when
-- they differ. A parameter create_order sends as NULL is a literal NULL here (a pgbench variable
-- cannot hold one).
--
-- Drawn as the direct phase draws them (bench/order_entry.py): a random bench client and salesperson,
-- two distinct random SKUs with 1-3 units each, sorted in the stock lock order (ADR-002).
\set c random(1, :nclients)
\set sp random(1, :nsalespeople)
\set s1 random(1, :nskus)
\set s2 1 + (:s1 - 1 + random(1, :nskus - 1)) % :nskus
\set q1 random(1, 3)
\set q2 random(1, 3)
-- What create_order's Python computes before its transaction (the ids, the fingerprint, the lines, the
-- payload of the real size), as one primary-key read of the pick tables: the floor's only extra round trip.
-- Casts on parameters are pgbench's (it sends untyped parameters; psycopg sends typed ones).
SELECT ids.request, ids.order_id, ids.event_ids, ids.correlation, ids.request_hash, c.id AS client, sp.id AS salesperson,
       l.products, l.skus, l.quantities, l.prices, l.total,
       jsonb_build_object('order_id', ids.order_id, 'order_number', 'P-000000',
                          'client', jsonb_build_object('id', c.id, 'name', c.name, 'tier', c.tier),
                          'warehouse_id', :warehouse::text, 'currency', 'ARS', 'lines', l.lines,
                          'total_cents', l.total)::text AS payload
  FROM (SELECT gen_random_uuid() AS request, gen_random_uuid() AS order_id,
               ARRAY[gen_random_uuid(), gen_random_uuid()] AS event_ids,
               replace(gen_random_uuid()::text, '-', '') AS correlation,
               encode(sha256(gen_random_uuid()::text::bytea), 'hex') AS request_hash) AS ids,
       bench_floor_client c, bench_floor_salesperson sp,
       LATERAL (SELECT array_agg(s.product_id ORDER BY s.sku COLLATE "C") AS products,
                       array_agg(s.sku ORDER BY s.sku COLLATE "C") AS skus,
                       array_agg(w.q ORDER BY s.sku COLLATE "C") AS quantities,
                       array_agg(s.price_cents ORDER BY s.sku COLLATE "C") AS prices,
                       sum(w.q * s.price_cents) AS total,
                       jsonb_agg(jsonb_build_object('sku', s.sku, 'quantity', w.q, 'unit_price_cents', s.price_cents,
                                                    'amount_cents', w.q * s.price_cents) ORDER BY s.sku COLLATE "C") AS lines
                  FROM (VALUES (:s1::integer, :q1::integer), (:s2::integer, :q2::integer)) AS w(i, q)
                  JOIN bench_floor_sku s ON s.i = w.i) AS l
 WHERE c.i = :c AND sp.i = :sp
\gset
BEGIN;
-- claim_request (nexo/orders/repository.py)
        INSERT INTO idempotency_keys (request_id, request_hash, fingerprint_version)
        VALUES (:request, :request_hash, :fingerprint_version)
        ON CONFLICT (request_id) DO UPDATE SET request_id = EXCLUDED.request_id
        RETURNING (xmax = 0) AS inserted, request_hash, fingerprint_version, order_id
;
-- order_context (nexo/orders/repository.py)
        SELECT c.id AS client_id, c.name AS client_name, c.tier AS client_tier,
               w.id IS NOT NULL AS warehouse_exists, p.id AS product_id, p.sku, pl.price_cents
          FROM (SELECT 1) AS one
          LEFT JOIN client c ON c.id = :client
          LEFT JOIN warehouse w ON w.id = :warehouse
          LEFT JOIN (product p LEFT JOIN price_list pl ON pl.product_id = p.id) ON p.sku = ANY(:skus::text[])
;
-- record_order (nexo/orders/repository.py): credit, the order, its lines, the key linked
        WITH charged AS (
                 UPDATE client SET exposure_cents = exposure_cents + :total
                  WHERE id = :client AND exposure_cents + :total <= credit_limit_cents
                 RETURNING id),
             decided AS (
                 SELECT CASE WHEN EXISTS (SELECT 1 FROM charged) THEN :confirmed
                             ELSE :pending END AS status),
             new_order AS (
                 INSERT INTO orders (id, client_id, warehouse_id, salesperson_id, status, total_cents, charged_cents,
                                     billing_status, delivery_method, api_key_id)
                 SELECT :order_id::uuid, :client::uuid, :warehouse::text, :salesperson::bigint, status, :total::bigint,
                        CASE status WHEN :confirmed THEN :total::bigint ELSE 0 END,
                        CASE status WHEN :confirmed THEN :to_invoice ELSE :not_invoiced END,
                        NULL, NULL
                   FROM decided
                 RETURNING status, number),
             new_lines AS (
                 INSERT INTO order_line (order_id, product_id, sku, quantity, unit_price_cents)
                 SELECT :order_id::uuid, product_id, sku, quantity, unit_price_cents
                   FROM unnest(:products::uuid[], :skus::text[], :quantities::integer[],
                               :prices::bigint[]) AS l(product_id, sku, quantity, unit_price_cents)),
             linked AS (
                 UPDATE idempotency_keys SET order_id = :order_id WHERE request_id = :request)
        SELECT status, number FROM new_order
;
-- reserve_lines (nexo/stock/reservations.py)
        WITH wanted AS (
                 SELECT * FROM unnest(:products::uuid[], :quantities::integer[]) WITH ORDINALITY
                                   AS w(product_id, quantity, position)),
             locked AS MATERIALIZED (
                 SELECT s.product_id, w.quantity
                   FROM stock_level s JOIN wanted w ON w.product_id = s.product_id
                  WHERE s.warehouse_id = :warehouse
                  ORDER BY w.position
                    FOR UPDATE OF s),
             reserved AS (
                 UPDATE stock_level s SET reserved = s.reserved + l.quantity
                   FROM locked l
                  WHERE s.product_id = l.product_id AND s.warehouse_id = :warehouse
                    AND s.on_hand - s.reserved >= l.quantity
                 RETURNING s.product_id, l.quantity),
             recorded AS (
                 INSERT INTO stock_reservation (order_id, product_id, warehouse_id, quantity, kind, expires_at)
                 SELECT :order_id::uuid, product_id, :warehouse::text, quantity, :firm::text, NULL FROM reserved)
        SELECT product_id FROM reserved
;
-- add_events (nexo/outbox/repository.py): the two events of a confirmed order, one payload
INSERT INTO outbox_event_live (id, aggregate_id, event_type, destination, payload, request_id, depends_on) SELECT id, :order_id::uuid, event_type, destination, :payload::jsonb, :correlation::text, depends_on   FROM unnest(:event_ids::uuid[], :event_types::text[], :destinations::text[], :depends_on::uuid[]) AS e(id, event_type, destination, depends_on)
;
COMMIT;
