"""Supervision (guarantee 15, docs/guarantees.md): what happened to Nexo's own processes, recorded for /ops and /metrics."""
