-- History out of the hot path (ADR-019, "History out of the hot path").
--
-- outbox_event and delivery_attempt become partitioned tables, by the day an event settled
-- (`settled_on`). An event that can still be claimed, retried, replayed or withdrawn has settled_on =
-- 9999-12-31 and lives in the live partition, which every statement of the relay names: its tables and
-- indexes hold the work still to do, plus what settled within the last hour, whatever the history. The
-- maintenance runner moves an event that settled (delivered or withdrawn, no lease, no open attempt,
-- nothing still depending on it) into the partition of its month, its attempts with it; with
-- OUTBOX_RETENTION_DAYS set, a month past the retention is dropped, not deleted row by row
-- (nexo/outbox/history.py).
--
-- Every row is copied into the live partition here; the maintenance runner files them by month later,
-- online, in small batches. Nothing outside the outbox changes: the table keeps its name and columns
-- (CONTRACT.md), a query that does not name settled_on reads every partition.
--
-- PostgreSQL 15 or newer: an UPDATE that moves a referenced row to another partition must fire the
-- foreign keys' ON UPDATE action (15 does); before 15 it ran as a DELETE and ON DELETE CASCADE would
-- have deleted the attempts of every event moved.
DO $$
BEGIN
    IF current_setting('server_version_num')::int < 150000 THEN
        RAISE EXCEPTION 'Nexo needs PostgreSQL 15 or newer from migration 0700 on (this server is %)',
            current_setting('server_version');
    END IF;
END $$;

ALTER TABLE dead_letter DROP CONSTRAINT dead_letter_event_id_fkey;
-- The sequence outlives its table: the attempts' ids go on where they were.
ALTER SEQUENCE delivery_attempt_id_seq OWNED BY NONE;
ALTER TABLE outbox_event RENAME TO outbox_event_before_0700;
ALTER TABLE delivery_attempt RENAME TO delivery_attempt_before_0700;

CREATE TABLE outbox_event (
    LIKE outbox_event_before_0700 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS,
    -- 9999-12-31 while live, the UTC day it settled once filed. Not 'infinity': psycopg, like Python,
    -- cannot load that date, and a SELECT * of an event would fail.
    settled_on date NOT NULL DEFAULT '9999-12-31'
) PARTITION BY RANGE (settled_on);

CREATE TABLE delivery_attempt (
    LIKE delivery_attempt_before_0700 INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMMENTS,
    event_settled_on date NOT NULL DEFAULT '9999-12-31'   -- its event's settled_on: an attempt moves with its event
) PARTITION BY RANGE (event_settled_on);

-- The live partitions are the queue: claims and outcomes update them in place all day, so they are
-- vacuumed after a small share of dead rows (the settings migration 0500 gave the whole tables).
CREATE TABLE outbox_event_live PARTITION OF outbox_event FOR VALUES FROM ('9999-12-31') TO (MAXVALUE)
    WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
          autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 1);
CREATE TABLE delivery_attempt_live PARTITION OF delivery_attempt FOR VALUES FROM ('9999-12-31') TO (MAXVALUE)
    WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
          autovacuum_analyze_scale_factor = 0.05);

INSERT INTO outbox_event SELECT *, '9999-12-31'::date FROM outbox_event_before_0700;
INSERT INTO delivery_attempt SELECT *, '9999-12-31'::date FROM delivery_attempt_before_0700;
DROP TABLE delivery_attempt_before_0700;
DROP TABLE outbox_event_before_0700;
ALTER SEQUENCE delivery_attempt_id_seq OWNED BY delivery_attempt.id;

-- A key of a partitioned table includes its partition key. An id is still one event: ids are new
-- UUIDs, and a move is an UPDATE of the row, never a second row.
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_pkey PRIMARY KEY (id, settled_on);
ALTER TABLE delivery_attempt ADD CONSTRAINT delivery_attempt_pkey PRIMARY KEY (id, event_settled_on);
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_aggregate_id_fkey FOREIGN KEY (aggregate_id) REFERENCES orders(id);
ALTER TABLE outbox_event ADD CONSTRAINT outbox_event_subscription_fk
    FOREIGN KEY (subscription_id) REFERENCES webhook_subscription(id);
-- A dead letter follows its event when it is filed (ON UPDATE CASCADE), and a month a dead letter still
-- points into cannot be dropped (the retention pass keeps it until that dead letter goes). An attempt's
-- key is below, partition by partition.
ALTER TABLE dead_letter ADD COLUMN event_settled_on date NOT NULL DEFAULT '9999-12-31';
ALTER TABLE dead_letter ADD CONSTRAINT dead_letter_event_id_fkey FOREIGN KEY (event_id, event_settled_on)
    REFERENCES outbox_event (id, settled_on) ON DELETE CASCADE ON UPDATE CASCADE;
-- depends_on (ADR-017, ADR-022) no longer has a foreign key: a key would need the original's settled_on,
-- which changes when the original is filed. Nothing is lost: an event is filed only once settled, and
-- the relay reads an original it cannot find in the live partition as settled (nexo/outbox/repository.py).

-- The indexes of before, by the same names. On every partition, those the history is read by: an order's
-- events (its page, the API), the deliveries of the last hours (the operations page). On the live
-- partition alone, those of the work still to do (the claim, the pending and failed counts, the filing's
-- check for dependants): each query they serve names that partition, and a month without them costs the
-- planner less on every read that has to look at every month (measured in ADR-019).
-- The live partitions also say that an id is one row: the partitioned key (id, settled_on) does not tell
-- the planner so, and without it, it guessed dozens of rows per id and read the queue from end to end to
-- join a claim's sixteen events (docs/performance.md, 2026-12-07).
CREATE UNIQUE INDEX outbox_event_live_id ON outbox_event_live (id);
CREATE UNIQUE INDEX delivery_attempt_live_id ON delivery_attempt_live (id);
CREATE INDEX outbox_event_aggregate_idx ON outbox_event (aggregate_id);
-- An attempt points at its event within its own pair of partitions: the live ones here, each month's
-- when the month is added (nexo/outbox/history.py). Not one key from delivery_attempt to outbox_event: its
-- check, run for each attempt a claim opens, is planned over every month of outbox_event, and a claim of
-- sixteen took 3 ms more at 39 partitions than with the check off (docs/performance.md, 2026-12-07).
-- Deferred to the commit: filing moves an event's attempts and then the event, in one transaction.
ALTER TABLE delivery_attempt_live ADD CONSTRAINT delivery_attempt_live_event_fkey
    FOREIGN KEY (event_id) REFERENCES outbox_event_live (id) DEFERRABLE INITIALLY DEFERRED;
-- An event deleted takes its attempts with it, as ON DELETE CASCADE did. A trigger, not the key's action:
-- filing moves an event out of its partition, which Postgres runs as a delete there, and a cascade would
-- delete the attempts it moves. Filing moves the attempts first, so the trigger finds none of them.
CREATE FUNCTION outbox_event_takes_its_attempts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM delivery_attempt WHERE event_id = OLD.id AND event_settled_on = OLD.settled_on;
    RETURN OLD;
END $$;
CREATE TRIGGER outbox_event_takes_its_attempts BEFORE DELETE ON outbox_event
    FOR EACH ROW EXECUTE FUNCTION outbox_event_takes_its_attempts();
CREATE INDEX outbox_delivered_idx ON outbox_event (destination, delivered_at) WHERE status = 'ENTREGADO';
CREATE INDEX delivery_attempt_event_idx ON delivery_attempt (event_id, started_at);
CREATE INDEX outbox_pendientes_idx ON outbox_event_live (next_attempt_at) WHERE status = 'PENDIENTE';
CREATE INDEX outbox_event_unsettled_idx ON outbox_event_live (destination, created_at) WHERE status <> 'ENTREGADO';
CREATE INDEX outbox_failed_idx ON outbox_event_live (destination) WHERE status = 'FALLIDO';
CREATE INDEX outbox_event_depends_on_idx ON outbox_event_live (depends_on) WHERE depends_on IS NOT NULL;
CREATE INDEX outbox_event_subscription_idx ON outbox_event_live (subscription_id, aggregate_id)
    WHERE subscription_id IS NOT NULL;

ANALYZE outbox_event;
ANALYZE delivery_attempt;
