"""The growth bench's two loads in one database (bench/grow.py generations): a first page's worth, then the
years under it with none of their orders waiting. Their rows never collide, the books add up, and the
credit queue holds the first load's waiting orders only, so a page is compared with itself (ADR-011)."""

from __future__ import annotations

from bench import grow
from nexo.books import check_books

FIRST_PAGE = grow.Volume(orders=1_000, dead_letters=200, clients=60, skus=100)
YEARS = grow.Volume(orders=3_000, dead_letters=300, clients=200, skus=300)


def test_a_first_page_then_the_years_load_apart_and_add_up(db):
    with db.transaction() as tx:
        first = grow.load(tx.conn, FIRST_PAGE, generation=1)
        years = grow.load(tx.conn, YEARS, generation=0, waiting=False)
        tx.commit()
    assert first["orders"] == FIRST_PAGE.orders and years["orders"] == YEARS.orders
    # Each load's updates touched its own rows only: the exposure of every client it loaded, no other.
    assert first["client (exposure)"] <= FIRST_PAGE.clients and years["client (exposure)"] <= YEARS.clients
    assert years["audit_log"] < YEARS.dead_letters  # the first load's dead letters were not audited again
    with db.transaction() as tx:
        tx.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        failed = [finding for finding in check_books(tx.conn) if not finding.ok]
        waiting = tx.execute("SELECT count(*) AS n FROM orders WHERE status = 'PENDIENTE_AUTORIZACION'").fetchone()["n"]
        skus = tx.execute("SELECT count(*) AS n FROM product WHERE sku LIKE 'GR1-%' OR sku LIKE 'GRW-%'").fetchone()["n"]
    assert failed == []
    assert waiting == grow.WAITING_SPAN // 7  # the first page's 20, none of the years'
    assert skus == FIRST_PAGE.skus + YEARS.skus
    with db.transaction() as tx:
        added = grow.add_clients(tx.conn, YEARS.clients + 1, YEARS.clients + 500)
        tx.commit()
    assert added == 500
