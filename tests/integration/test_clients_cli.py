"""`flask --app app clients list [TEXT]`: the ids an integration puts in its orders (README, Integrations)."""

from __future__ import annotations


def test_clients_list_prints_each_client_s_id_and_name_filtered_by_any_part_of_the_name(app, db):
    with db.reading() as conn:
        ids = {row["name"]: str(row["id"]) for row in conn.execute("SELECT id, name FROM client").fetchall()}
    everyone = app.test_cli_runner().invoke(args=["clients", "list"])
    assert everyone.exit_code == 0, everyone.output
    lines = [line.split("\t") for line in everyone.output.splitlines()]
    assert {(line[0], line[1]) for line in lines} == {(i, name) for name, i in ids.items()}
    assert [line[1] for line in lines] == sorted(line[1] for line in lines)

    some = app.test_cli_runner().invoke(args=["clients", "list", "sur"])
    assert some.exit_code == 0 and some.output.split("\t")[:2] == [ids["Corralón del Sur"], "Corralón del Sur"]

    none = app.test_cli_runner().invoke(args=["clients", "list", "100%"])
    assert none.exit_code == 0 and "no client's name contains '100%'" in none.output
