"""Supervision (DESIGN guarantee 15): what happened to Nexo's own processes, recorded for /ops and /metrics."""
