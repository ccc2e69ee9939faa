"""What the catalog already says about the lines of a form sent back (a 400 or a 422): each typed SKU's name, price,
availability at the chosen deposit and line amount, and every refusal it can tell in the same round.

A hint, never the decision: create_order decides inside its transaction (ADR-002, RN-03). But a salesperson
who typed an unknown SKU next to a bad quantity, or two lines short of stock, learns it all at once instead of
one error per submission (ADR-021).
"""

from __future__ import annotations

from dataclasses import dataclass

from nexo.form_input import has_control_characters
from nexo.orders.commands import MAX_LINE_QUANTITY
from nexo.orders.forms import MAX_SKU_LENGTH, LineRow, quantity_error


@dataclass(frozen=True)
class LineHint:
    """One typed line as the catalog sees it now."""

    name: str
    price_cents: int | None
    available: int | None  # at the chosen deposit; None when no deposit was chosen
    amount_cents: int | None  # quantity × price, when both are known


def lookup_skus(rows: list[LineRow]) -> list[str]:
    """The SKUs worth looking up: typed, of a plausible shape (a malformed one never reaches the database)."""
    return sorted(
        {
            row.normalised_sku
            for row in rows
            if row.normalised_sku and len(row.sku) <= MAX_SKU_LENGTH and not has_control_characters(row.sku)
        }
    )


def hint_rows(rows: list[LineRow], catalog: list[dict], deposit: str | None) -> int:
    """Give each typed row its hint and the reasons the catalog can tell (keeping any reason already set);
    return the total of the lines whose amount is known, in cents."""
    by_sku = {item["sku"]: item for item in catalog}
    total = 0
    for row in rows:
        if not row.normalised_sku:
            continue
        item = by_sku.get(row.normalised_sku)
        if item is None:
            row.reason = row.reason or ("invalid_sku" if lookup_skus([row]) else None)
            continue
        quantity = int(row.quantity) if row.quantity and quantity_error(row.quantity, MAX_LINE_QUANTITY) is None else None
        available = item["available"].get(deposit, 0) if deposit else None
        amount = quantity * item["price_cents"] if quantity is not None and item["price_cents"] is not None else None
        row.hint = LineHint(item["name"], item["price_cents"], available, amount)
        total += amount or 0
        if row.reason is None and item["price_cents"] is None:
            row.reason = "price_source_unavailable"
        elif row.reason is None and quantity is not None and available is not None and quantity > available:
            row.reason = "insufficient_stock"
    return total
