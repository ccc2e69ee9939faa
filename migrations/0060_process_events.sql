-- Supervision (DESIGN guarantee 15): every time a long-running process of Nexo died and was started
-- again, durably, so /ops and /metrics can say which program restarts and how often.
--
-- Written by the supervisor's event listener (`python -m jobs.process_events`, one row per state
-- change supervisord reports) and by gunicorn's master for its own workers (scripts/gunicorn_conf.py).
-- Telemetry, not business data: nexo.processes.repository purges old rows, keeping each program's last.
CREATE TABLE process_event (
    id          bigserial PRIMARY KEY,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    host        text NOT NULL,
    -- supervisor's process name (web, worker_0, sweeper, …); web.worker for a gunicorn worker.
    program     text NOT NULL,
    -- running: started and stayed up; exited: died while running (restarted at once); backoff: died
    -- while starting (retried after a pause); fatal: supervisor gave up; revived: started again after
    -- a fatal; worker_exited: gunicorn replaced a worker that died.
    kind        text NOT NULL CHECK (kind IN ('running', 'exited', 'backoff', 'fatal', 'revived', 'worker_exited')),
    pid         integer,
    detail      text NOT NULL DEFAULT ''
);
CREATE INDEX process_event_program_time_idx ON process_event (host, program, occurred_at);
CREATE INDEX process_event_time_idx ON process_event (occurred_at);
