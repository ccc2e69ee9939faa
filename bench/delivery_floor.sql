-- The floor of the delivery path (docs/performance.md, "The floor"): one relay batch's claim and record, as
-- nexo/outbox/relay.py sends them (_deliver_batch, record_all), with no HTTP and no Python in between; every
-- delivery succeeded. pgbench -M prepared runs it; bench/floor.py pre-creates the events and gives the -D
-- constants. Each client is one lane (ADR-010): even clients claim the fiscal provider's events, odd ones the
-- warehouse's, a batch of `batch` at most (relay.MAX_BATCH). The statements are the relay's own SQL,
-- parameters aside (tests/integration/test_bench_floor.py fails when they differ); the claim's rows are
-- gathered into arrays (pgbench keeps one row of a result), and a parameter the relay sends as NULL is a
-- literal NULL here. Casts on parameters are pgbench's (it sends untyped parameters). The claims' LIMIT is
-- written in by bench/floor.py (batch_written_in) before pgbench reads the script, as the relay writes its in.
\if :client_id % 2 = 0
BEGIN;
-- claim_due (CLAIM_SQL, nexo/outbox/repository.py), its rows gathered into arrays for the record below
WITH claimed AS (
    UPDATE outbox_event_live
       SET locked_until = now() + make_interval(secs => :lease_s),
           claim_token = gen_random_uuid(),
           attempts = attempts + 1
     WHERE id IN (SELECT id FROM outbox_event_live pending
                   WHERE status = 'PENDIENTE'
                     AND next_attempt_at <= now()
                     AND (locked_until IS NULL OR locked_until < now())
                     -- a cycle that has spent its attempts is failed (fail_spent), never tried again
                     AND attempts - cycle_started_attempts < :max_attempts::integer
                     AND (:fiscal::text IS NULL OR destination = :fiscal::text)
                     AND (pending.depends_on IS NULL OR NOT EXISTS (SELECT 1 FROM outbox_event_live o
                            WHERE o.id = pending.depends_on
                              AND (o.status = :on_its_way OR (o.status = :withdrawn AND o.locked_until >= now()))))
                   ORDER BY next_attempt_at
                   LIMIT :batch::integer
                   FOR UPDATE SKIP LOCKED)
    RETURNING id, aggregate_id, event_type, destination, payload, attempts, claim_token, request_id, depends_on,
              subscription_id, attempts - cycle_started_attempts AS cycle_attempts
), abandoned AS (
    -- An earlier attempt still open lost its lease without recording how it ended: it is over now.
    UPDATE delivery_attempt_live a
       SET finished_at = clock_timestamp(), outcome = :no_outcome,
           error = 'el intento terminó sin que se registrara su resultado',
           duration_ms = (extract(epoch FROM clock_timestamp() - a.started_at) * 1000)::integer
      FROM claimed WHERE a.event_id = claimed.id AND a.finished_at IS NULL
), attempt AS (
    INSERT INTO delivery_attempt_live (event_id, attempt_no, claim_token, worker, started_at)
    SELECT id, attempts, claim_token, :worker::text, clock_timestamp() FROM claimed
    RETURNING id AS attempt_id, event_id
), batch AS (
    SELECT claimed.*, attempt.attempt_id,
           -- a cancellation whose original was withdrawn may find nothing to undo there (ADR-017)
           coalesce(original.status = :withdrawn, false) AS original_withdrawn,
           -- a webhook notice goes to its subscription's URL, signed with its secret (ADR-022)
           subscription.url AS webhook_url, subscription.secret AS webhook_secret
      FROM claimed JOIN attempt ON attempt.event_id = claimed.id
      LEFT JOIN outbox_event_live original ON original.id = claimed.depends_on
      LEFT JOIN webhook_subscription subscription ON subscription.id = claimed.subscription_id
)
SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids,
       coalesce(array_agg(claim_token ORDER BY id), '{}') AS tokens,
       coalesce(array_agg(attempt_id ORDER BY id), '{}') AS attempt_ids,
       coalesce(array_agg(DISTINCT aggregate_id ORDER BY aggregate_id), '{}') AS orders,
       coalesce(array_agg(aggregate_id ORDER BY id), '{}') AS effect_orders,
       coalesce(array_agg('E-' || left(id::text, 8) ORDER BY id), '{}') AS effects,
       coalesce(array_agg(:delivered::text ORDER BY id), '{}') AS outcomes,
       coalesce(array_agg(0::float8 ORDER BY id), '{}') AS delays,
       coalesce(array_agg(NULL::text ORDER BY id), '{}') AS errors,
       coalesce(array_agg(200 ORDER BY id), '{}') AS statuses,
       coalesce(array_agg(5 ORDER BY id), '{}') AS durations,
       count(*) AS claimed
  FROM batch
\gset
COMMIT;
\else
BEGIN;
-- claim_due (CLAIM_SQL, nexo/outbox/repository.py), its rows gathered into arrays for the record below
WITH claimed AS (
    UPDATE outbox_event_live
       SET locked_until = now() + make_interval(secs => :lease_s),
           claim_token = gen_random_uuid(),
           attempts = attempts + 1
     WHERE id IN (SELECT id FROM outbox_event_live pending
                   WHERE status = 'PENDIENTE'
                     AND next_attempt_at <= now()
                     AND (locked_until IS NULL OR locked_until < now())
                     -- a cycle that has spent its attempts is failed (fail_spent), never tried again
                     AND attempts - cycle_started_attempts < :max_attempts::integer
                     AND (:warehouse::text IS NULL OR destination = :warehouse::text)
                     AND (pending.depends_on IS NULL OR NOT EXISTS (SELECT 1 FROM outbox_event_live o
                            WHERE o.id = pending.depends_on
                              AND (o.status = :on_its_way OR (o.status = :withdrawn AND o.locked_until >= now()))))
                   ORDER BY next_attempt_at
                   LIMIT :batch::integer
                   FOR UPDATE SKIP LOCKED)
    RETURNING id, aggregate_id, event_type, destination, payload, attempts, claim_token, request_id, depends_on,
              subscription_id, attempts - cycle_started_attempts AS cycle_attempts
), abandoned AS (
    -- An earlier attempt still open lost its lease without recording how it ended: it is over now.
    UPDATE delivery_attempt_live a
       SET finished_at = clock_timestamp(), outcome = :no_outcome,
           error = 'el intento terminó sin que se registrara su resultado',
           duration_ms = (extract(epoch FROM clock_timestamp() - a.started_at) * 1000)::integer
      FROM claimed WHERE a.event_id = claimed.id AND a.finished_at IS NULL
), attempt AS (
    INSERT INTO delivery_attempt_live (event_id, attempt_no, claim_token, worker, started_at)
    SELECT id, attempts, claim_token, :worker::text, clock_timestamp() FROM claimed
    RETURNING id AS attempt_id, event_id
), batch AS (
    SELECT claimed.*, attempt.attempt_id,
           -- a cancellation whose original was withdrawn may find nothing to undo there (ADR-017)
           coalesce(original.status = :withdrawn, false) AS original_withdrawn,
           -- a webhook notice goes to its subscription's URL, signed with its secret (ADR-022)
           subscription.url AS webhook_url, subscription.secret AS webhook_secret
      FROM claimed JOIN attempt ON attempt.event_id = claimed.id
      LEFT JOIN outbox_event_live original ON original.id = claimed.depends_on
      LEFT JOIN webhook_subscription subscription ON subscription.id = claimed.subscription_id
)
SELECT coalesce(array_agg(id ORDER BY id), '{}') AS ids,
       coalesce(array_agg(claim_token ORDER BY id), '{}') AS tokens,
       coalesce(array_agg(attempt_id ORDER BY id), '{}') AS attempt_ids,
       coalesce(array_agg(DISTINCT aggregate_id ORDER BY aggregate_id), '{}') AS orders,
       coalesce(array_agg(aggregate_id ORDER BY id), '{}') AS effect_orders,
       coalesce(array_agg('E-' || left(id::text, 8) ORDER BY id), '{}') AS effects,
       coalesce(array_agg(:delivered::text ORDER BY id), '{}') AS outcomes,
       coalesce(array_agg(0::float8 ORDER BY id), '{}') AS delays,
       coalesce(array_agg(NULL::text ORDER BY id), '{}') AS errors,
       coalesce(array_agg(200 ORDER BY id), '{}') AS statuses,
       coalesce(array_agg(5 ORDER BY id), '{}') AS durations,
       count(*) AS claimed
  FROM batch
\gset
COMMIT;
\endif
-- record_all (nexo/outbox/relay.py): the orders, the events' fence, the outcomes, the attempts, the effects
BEGIN;
SELECT id FROM orders WHERE id = ANY(:orders::uuid[]) ORDER BY id FOR NO KEY UPDATE;
SELECT id FROM outbox_event_live WHERE id = ANY(:ids::uuid[]) ORDER BY id FOR UPDATE;
UPDATE outbox_event_live e
   SET status = CASE o.outcome WHEN :retry THEN :pending ELSE o.outcome END,
       delivered_at = CASE WHEN o.outcome = :delivered THEN now() ELSE e.delivered_at END,
       withdrawn_at = CASE WHEN o.outcome = :withdrawn THEN now() ELSE e.withdrawn_at END,
       next_attempt_at = CASE WHEN o.outcome = :retry THEN now() + make_interval(secs => o.delay_s)
                              ELSE e.next_attempt_at END,
       locked_until = NULL,
       last_error = o.error
  FROM unnest(:ids::uuid[], :tokens::uuid[], :outcomes::text[], :delays::float8[], :errors::text[])
       AS o(id, claim_token, outcome, delay_s, error)
 WHERE e.id = o.id AND e.claim_token = o.claim_token AND e.status = :pending
RETURNING e.id
;
UPDATE delivery_attempt_live a SET finished_at = clock_timestamp(), outcome = o.outcome, http_status = o.http_status, error = o.error, duration_ms = o.duration_ms FROM unnest(:attempt_ids::bigint[], :outcomes::text[], :statuses::integer[], :errors::text[], :durations::integer[])   AS o(id, outcome, http_status, error, duration_ms) WHERE a.id = o.id AND a.finished_at IS NULL;
\if :client_id % 2 = 0
UPDATE orders o SET billing_status = :billed, invoice_number = v.effect FROM unnest(:effect_orders::uuid[], :effects::text[]) AS v(id, effect) WHERE o.id = v.id;
-- the invoice's webhook notices (nexo/outbox/webhooks.py notify_many): the floor's orders came from no API key
SELECT s.id AS subscription_id,
       o.id, o.number, o.status, o.billing_status, o.client_id, o.total_cents, o.created_at,
       o.invoice_number, o.credit_note_number, o.handoff_ticket, now() AS occurred_at
  FROM orders o
  JOIN api_key k ON k.id = o.api_key_id AND k.revoked_at IS NULL
  JOIN webhook_subscription s ON s.api_key_id = k.id AND s.revoked_at IS NULL AND :invoiced::text = ANY(s.events)
 WHERE o.id = ANY(:effect_orders::uuid[]) AND o.api_key_id IS NOT NULL
 ORDER BY o.id, s.id;
\else
UPDATE orders o SET handoff_ticket = v.effect FROM unnest(:effect_orders::uuid[], :effects::text[]) AS v(id, effect) WHERE o.id = v.id;
\endif
COMMIT;
