"""API keys with scopes (a subset of their user's permissions), an expiry, `flask apikeys rotate`, and their
first use in the authentication trail (ADR-018)."""

from __future__ import annotations

import pytest

from nexo.api import keys


def get(client, key: str, path: str = "/api/v1/orders"):
    return client.get(path, headers={"Authorization": f"Bearer {key}"})


def give_roles(db, username: str, *roles: str) -> None:
    with db.transaction() as tx:
        for role in roles:
            tx.execute(
                "INSERT INTO user_role (user_id, role_name)"
                " SELECT id, %s FROM app_user WHERE username = %s ON CONFLICT DO NOTHING",
                [role, username],
            )
        tx.commit()


def test_a_scoped_key_acts_with_its_scopes_only(client, db):
    give_roles(db, "vendedor1", "credito")  # the user may enter orders and decide credit
    credit_only = keys.create_key(db, name="solo-credito", username="vendedor1", actor="test", scopes=["credit.authorize"])
    full = keys.create_key(db, name="completa", username="vendedor1", actor="test")
    assert get(client, credit_only).status_code == 403  # listing orders needs orders.create
    assert get(client, full).status_code == 200


def test_a_key_cannot_be_scoped_beyond_its_users_permissions(db):
    with pytest.raises(keys.ApiKeyError, match="dlq.admin"):
        keys.create_key(db, name="demasiado", username="vendedor1", actor="test", scopes=["orders.create", "dlq.admin"])


def test_an_expired_key_is_refused_like_a_revoked_one(client, db):
    key = keys.create_key(db, name="vence", username="vendedor1", actor="test", expires_in_days=1)
    assert get(client, key).status_code == 200
    with db.transaction() as tx:
        tx.execute("UPDATE api_key SET expires_at = now() - interval '1 second' WHERE name = 'vence'")
        tx.commit()
    assert get(client, key).status_code == 401


def test_rotate_replaces_the_key_at_once_keeping_user_scopes_and_expiry(app, client, db):
    old = keys.create_key(db, name="tienda", username="vendedor1", actor="test", scopes=["orders.create"], expires_in_days=30)
    result = app.test_cli_runner().invoke(args=["apikeys", "rotate", "tienda"])
    assert result.exit_code == 0, result.output
    new = result.output.strip().splitlines()[-1]
    assert new.startswith("nexo_") and new != old
    assert get(client, old).status_code == 401 and get(client, new).status_code == 200
    with db.reading() as conn:
        rows = conn.execute("SELECT scopes, expires_at, revoked_at FROM api_key WHERE name = 'tienda' ORDER BY id").fetchall()
    assert [r["revoked_at"] is not None for r in rows] == [True, False]
    assert rows[0]["scopes"] == rows[1]["scopes"] == ["orders.create"] and rows[0]["expires_at"] == rows[1]["expires_at"]


def test_a_keys_first_use_is_in_the_trail_once(client, db):
    key = keys.create_key(db, name="integracion", username="vendedor1", actor="test")
    for _ in range(3):
        assert get(client, key, "/api/v1/catalog").status_code == 200
    with db.reading() as conn:
        rows = conn.execute("SELECT actor, details FROM audit_log WHERE action = 'api_key.first_used'").fetchall()
    assert len(rows) == 1
    assert rows[0]["actor"] == "api_key:integracion" and rows[0]["details"]["client_addr"] == "127.0.0.1"


def test_create_on_the_command_line_takes_scopes_and_expiry(app, db):
    result = app.test_cli_runner().invoke(
        args=["apikeys", "create", "edi", "--user", "vendedor1", "--scope", "orders.create", "--expires-in-days", "7"]
    )
    assert result.exit_code == 0, result.output
    with db.reading() as conn:
        row = conn.execute(
            "SELECT scopes, expires_at > now() + interval '6 days' AS later FROM api_key WHERE name = 'edi'"
        ).fetchone()
    assert row == {"scopes": ["orders.create"], "later": True}
