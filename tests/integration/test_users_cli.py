def test_users_create_adds_a_user_with_a_role(app, db):
    runner = app.test_cli_runner()
    result = runner.invoke(
        args=["users", "create", "nuevo", "--name", "Nueva Vendedora", "--role", "ventas"],
        input="una-clave-larga\nuna-clave-larga\n",
    )
    assert result.exit_code == 0, result.output
    with db.reading() as conn:
        row = conn.execute(
            "SELECT u.username, ur.role_name FROM app_user u JOIN user_role ur ON ur.user_id = u.id WHERE u.username = 'nuevo'"
        ).fetchone()
    assert row == {"username": "nuevo", "role_name": "ventas"}


def test_users_create_refuses_an_unknown_role(app):
    result = app.test_cli_runner().invoke(
        args=["users", "create", "otro", "--name", "X", "--role", "superuser"], input="una-clave-larga\nuna-clave-larga\n"
    )
    assert result.exit_code != 0
    assert "unknown role" in result.output
