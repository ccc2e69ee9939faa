"""Dead letters (ADR-010): events that reached FALLIDO, for a human to replay or discard."""
