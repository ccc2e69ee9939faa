-- Several hosts (ADR-019).
--
-- A lease per singleton job: exactly one maintenance runner at a time across hosts (retention, purges,
-- telemetry housekeeping), one sweeper doing the Redis scan. A row with an expiry rather than a session
-- advisory lock: behind a transaction pooler a session lock stays on whatever server connection took
-- it. Every acquisition and renewal is one statement on the database's clock (nexo/leases.py).
CREATE TABLE leader_lease (
    name        text PRIMARY KEY,
    holder      text NOT NULL,             -- host id, program and pid of the holder
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);

-- When each host last said it was alive (its supervisor's event listener, on its ticks): a host not
-- seen for NEXO_HOST_EXPIRY_S leaves /ops and /metrics, and the maintenance runner purges its rows.
CREATE TABLE host_seen (
    host    text PRIMARY KEY,
    seen_at timestamptz NOT NULL DEFAULT now()
);

-- The queue's tables are updated in place on every claim and outcome: vacuum them after a small share
-- of dead rows rather than the default 20 % of a table that keeps growing with history.
ALTER TABLE outbox_event SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,
                              autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 1);
ALTER TABLE delivery_attempt SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 1000,
                                  autovacuum_analyze_scale_factor = 0.05);
