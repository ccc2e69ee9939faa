"""Thin RQ entry points and process mains: decode ids, call a service in nexo/, nothing else."""
