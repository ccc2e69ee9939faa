"""`make bench`: measured speed of order entry and delivery, next to the machine's own limit (ADR-011).

One run measures, on one Postgres and one Redis:
1. pgbench tpcb-like and simple-update TPS (the physical anchor),
2. create_order called directly, 3. the same through HTTP against gunicorn as `make run` starts it,
4. the hot SKU (64 buyers of one unit), 5. the relay (events/s and commit → ENTREGADO latency),
6. the ratios of (2) and (3) to (1), and prints them next to its targets (bench/report.py).

`python -m bench` expects DATABASE_URL and REDIS_URL of a fresh, migrated database (the Makefile target
runs it under `scripts/stack.py exec --throwaway`). See bench/scale.py for BENCH_SCALE and friends.
"""
