"""The Orders API for integrations (issue 13): JSON, Idempotency-Key, bearer API keys (ADR-015)."""
