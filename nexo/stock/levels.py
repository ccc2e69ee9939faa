"""SQL of stock levels: opening a product's stock row in a warehouse. The caller owns the transaction.

Everything after the opening is a reservation's or a dispatch's (reservations.py): on_hand moves only with
what leaves the warehouse, counted from the row's opening_on_hand (guarantee 19, `flask check`).
"""

from __future__ import annotations

from uuid import UUID

from nexo.db import Conn


def open_level(conn: Conn, *, product_id: UUID, warehouse_id: str, on_hand: int) -> None:
    """A new stock row with on_hand units and none reserved (migration 0100's trigger copies on_hand into opening_on_hand)."""
    conn.execute(
        "INSERT INTO stock_level (product_id, warehouse_id, on_hand) VALUES (%s, %s, %s)", [product_id, warehouse_id, on_hand]
    )
