"""Dead letters (ADR-021 adapted): events that reached FALLIDO, for a human to replay or discard."""
