"""ADR-002: the one order in which a transaction locks several stock_level rows, defined here only.

Rows are locked by SKU (the catalog spelling), compared byte by byte in UTF-8 — never in the
database's collation. Collations disagree with bytes and with each other: en_US (glibc, or ICU with
punctuation ignorable) sorts `AB1` before `AB-2`, bytes put `AB-2` first. Two writers that sort by
different rules lock the same two rows in opposite orders and deadlock. Python compares str by code
point, which is the UTF-8 byte order; in SQL the same order is `ORDER BY sku COLLATE "C"`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

# The SQL spelling of the same order, for a query whose rows are locked or used in that order.
SQL_COLLATE = 'COLLATE "C"'


def sku_lock_key(sku: str) -> bytes:
    """The sort key of a catalog SKU in the lock order: its UTF-8 bytes."""
    return sku.encode("utf-8")


def in_lock_order(items: Iterable[T], sku: Callable[[T], str]) -> list[T]:
    """items sorted in the stock lock order of their SKU (sku(item) gives the catalog spelling)."""
    return sorted(items, key=lambda item: sku_lock_key(sku(item)))
