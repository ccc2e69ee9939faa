"""Marta's navigation counts the pending dead letters (ADR-004: not a state nobody reads), like Laura's queue."""

from __future__ import annotations

import re

import pytest

from nexo.deadletters import service
from tests.dead_letter_factory import make_dead_letter

BADGE = re.compile(r'data-nav-badge="deadletters.list_dead_letters">(\d+)<')


def _badge(client) -> int | None:
    match = BADGE.search(client.get("/ops").get_data(as_text=True))
    return int(match.group(1)) if match else None


def test_marta_sees_how_many_dead_letters_are_pending_on_every_page(db, client, auth):
    auth.login("marta")
    assert _badge(client) is None  # none pending: no badge
    made = [make_dead_letter(db), make_dead_letter(db, destination="warehouse"), make_dead_letter(db)]
    assert _badge(client) == 3
    service.discard(db, made[0]["id"], "marta", "duplicado")
    service.replay(db, made[1]["id"], "marta", None)
    assert _badge(client) == 1  # only the pending ones count


@pytest.mark.parametrize("username", ["vendedor1", "laura", "sergio"])
def test_who_cannot_administer_dead_letters_sees_no_such_badge(db, client, auth, username):
    make_dead_letter(db)
    auth.login(username)
    assert "deadletters.list_dead_letters" not in client.get("/", follow_redirects=True).get_data(as_text=True)


def test_the_badge_disappears_instead_of_failing_the_page_when_its_count_fails(db, client, auth, monkeypatch):
    from nexo.deadletters import queries

    def broken(conn):
        raise RuntimeError("count failed")

    make_dead_letter(db)
    monkeypatch.setattr(queries, "pending_count", broken)
    auth.login("marta")
    response = client.get("/ops")
    assert response.status_code == 200 and "data-nav-badge" not in response.get_data(as_text=True)


def test_the_count_is_answered_from_the_partial_index_of_pending_dead_letters(db):
    # The count can be read from an index of pending rows only, so resolved dead letters piling up
    # (kept 90 days, ADR-010) never make Marta's every page slower. Seq scans off: the test table is
    # tiny and would be scanned whole; what matters is that such an index exists for this query.
    with db.transaction() as tx:
        tx.execute("SET LOCAL enable_seqscan = off")
        plan = tx.execute("EXPLAIN SELECT count(*) AS n FROM dead_letter WHERE status = 'pending'").fetchall()
    text = "\n".join(row["QUERY PLAN"] for row in plan)
    assert "dead_letter_one_pending_per_event" in text or "dead_letter_pending_signature_idx" in text, text
