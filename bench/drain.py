"""`python -m bench.drain`: the relay's own delivery code with no RQ job around each event (a diagnostic).

It runs nexo.outbox.sweeper.deliver_here, the loop the sweeper falls back to when Redis is down: one
claim, one delivery, one fenced record at a time, until no event is due. Comparing its events/s with
the RQ workers' shows what the per-event RQ job costs. It waits for a line on stdin before starting,
so that start-up is not measured.
"""

from __future__ import annotations

import sys
import time

from nexo.outbox import relay, sweeper
from nexo.settings import Settings


def main() -> int:
    """Set up (pool, HTTP session), wait for the go line, deliver until nothing is due; print count and CPU s."""
    ctx = relay.build_context(Settings.from_env(), "bench-drain")
    with ctx.db.reading() as conn:  # open the pool's connection before the clock starts
        conn.execute("SELECT 1")
    print("ready", flush=True)
    sys.stdin.readline()
    cpu = time.process_time()  # start-up (imports, pool) is not the delivery's cost
    delivered = sweeper.deliver_here(ctx, budget_s=600)
    print(delivered, round(time.process_time() - cpu, 3), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
