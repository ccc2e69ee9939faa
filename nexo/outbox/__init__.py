"""Transactional outbox (ADR-004): events written with the order, delivered later by the relay."""
