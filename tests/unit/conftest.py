"""Unit tests: pure functions and rules. No fixture here touches Postgres or Redis, and none may be added:
a test that needs either belongs in tests/integration/."""
