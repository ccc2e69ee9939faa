"""Telemetry the use cases emit: Prometheus metrics of this process and the durable signal history.

Low in the layer order (docs/architecture.md) so that every use case may call its hooks; nexo/ops
reads what it records and shows it on /ops and /metrics.
"""
