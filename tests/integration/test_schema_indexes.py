"""No index an order pays for twice: a btree index whose leading columns, their order and its predicate are
those of another index on the same table serves no read the other does not, and every write maintains both
(migration 0710, docs/performance.md "The lifecycle's budget")."""

from __future__ import annotations

# Pairs (covered, covering) of plain btree indexes on column lists: `covered`'s columns, with their
# ASC/DESC, are the first columns of `covering`, with the same WHERE. Unique indexes and primary keys are
# constraints, not only access paths, and are left out; so are expression indexes.
REDUNDANT = """
SELECT a.indexrelid::regclass::text AS covered, b.indexrelid::regclass::text AS covering
  FROM pg_index a
  JOIN pg_index b ON b.indrelid = a.indrelid AND b.indexrelid <> a.indexrelid
  JOIN pg_class ca ON ca.oid = a.indexrelid
  JOIN pg_class cb ON cb.oid = b.indexrelid
  JOIN pg_am ama ON ama.oid = ca.relam
  JOIN pg_am amb ON amb.oid = cb.relam
 WHERE ama.amname = 'btree' AND amb.amname = 'btree'
   AND NOT a.indisunique AND NOT a.indisprimary
   AND a.indexprs IS NULL AND b.indexprs IS NULL
   AND a.indnkeyatts <= b.indnkeyatts
   AND (b.indkey::int2[])[0:a.indnkeyatts - 1] = (a.indkey::int2[])[0:a.indnkeyatts - 1]
   AND (b.indoption::int2[])[0:a.indnkeyatts - 1] = (a.indoption::int2[])[0:a.indnkeyatts - 1]
   AND coalesce(pg_get_expr(a.indpred, a.indrelid), '') = coalesce(pg_get_expr(b.indpred, b.indrelid), '')
   AND (a.indnkeyatts < b.indnkeyatts OR a.indexrelid > b.indexrelid)
   AND ca.relnamespace = 'public'::regnamespace
 ORDER BY 1
"""


def test_no_index_is_a_prefix_of_another_on_the_same_table(db):
    with db.reading() as conn:
        redundant = [(r["covered"], r["covering"]) for r in conn.execute(REDUNDANT).fetchall()]
    assert redundant == []


def test_the_check_finds_a_redundant_index(db):
    # The query above, shown to catch the case it is for: an index whose columns begin another's.
    with db.transaction() as tx:  # never committed: the index is gone with the rollback
        tx.execute("CREATE INDEX test_redundant_idx ON orders (salesperson_id, created_at DESC)")
        found = [(r["covered"], r["covering"]) for r in tx.execute(REDUNDANT).fetchall()]
    assert found == [("test_redundant_idx", "orders_salesperson_keyset_idx")]
