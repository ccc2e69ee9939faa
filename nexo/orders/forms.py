"""Shape of the order pages' forms: the order form (requestId, client, warehouse, delivery method, line rows),
the cancel form and the warehouse's dispatch form.

Only shape is checked here (types, ranges, duplicates); whether a SKU exists, has a price or has stock
is the use case's business (RN-03, ADR-002) and comes back as a 422, not a 400.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from flask_wtf import FlaskForm
from wtforms import StringField, TextAreaField
from wtforms.validators import DataRequired, Length, Optional

from nexo.form_input import MESSAGE as CONTROL_CHARACTERS
from nexo.form_input import TRIMMED, RefusesControlCharacters, has_control_characters
from nexo.orders.cancel import MAX_REASON
from nexo.orders.commands import MAX_LINE_QUANTITY, MAX_LINES, OrderLineRequest
from nexo.orders.dispatch import MAX_QUANTITY as MAX_DISPATCH_QUANTITY
from nexo.orders.dispatch import ShipLine
from nexo.orders.fingerprint import normalise_sku

MIN_ROWS = 5
_LINE_KEY = re.compile(r"lines-([0-9]{1,4})-(sku|quantity)")
# ASCII digits only: \d (and int()) would also take other scripts' digits, e.g. "١٢" as 12.
_DIGITS = re.compile(r"[0-9]+")
MAX_SKU_LENGTH = 40


class OrderForm(RefusesControlCharacters, FlaskForm):
    """The header fields; choices are checked against the database by the view (they change over time)."""

    class Meta:
        # CSRFProtect already guards every POST of the app (nexo/extensions.py); checking twice adds nothing.
        csrf = False

    request_id = StringField()
    client_id = StringField()
    deposit_id = StringField()
    delivery_method = StringField(validators=[Optional(), Length(max=60, message="Hasta 60 caracteres.")])


@dataclass
class LineRow:
    """One row of the form as typed, with its error (shape) or rejection reason (business)."""

    sku: str = ""
    quantity: str = ""
    error: str | None = None
    reason: str | None = None
    hint: Any = None  # line_hints.LineHint once a form comes back: name, price, availability, amount

    @property
    def normalised_sku(self) -> str:
        """The SKU as the catalog spells it."""
        return normalise_sku(self.sku)


def parse_uuid(value: str | None) -> uuid.UUID | None:
    """A UUID from form text, or None when it is missing or malformed."""
    try:
        return uuid.UUID((value or "").strip())
    except ValueError:
        return None


def read_rows(formdata) -> tuple[list[LineRow], str | None]:
    """The line rows posted (in index order) and a form-level error, if any (too many rows)."""
    cells: dict[int, dict[str, str]] = {}
    for key in formdata:
        match = _LINE_KEY.fullmatch(key)
        if match:
            cells.setdefault(int(match.group(1)), {})[match.group(2)] = formdata.get(key, "")
    # Trimmed of white space but not of control characters (form_input.TRIMMED): str.strip() would
    # drop \x1c-\x1f, which _row_error must see and refuse.
    rows = [LineRow(cells[i].get("sku", "").strip(TRIMMED), cells[i].get("quantity", "").strip(TRIMMED)) for i in sorted(cells)]
    rows = [row for row in rows if row.sku or row.quantity]
    if len(rows) > MAX_LINES:
        return rows[:MAX_LINES], f"Un pedido admite hasta {MAX_LINES} líneas."
    return rows, None


def check_rows(rows: list[LineRow]) -> tuple[list[OrderLineRequest], str | None]:
    """Validate each row's shape (sets row.error) and return the lines, plus a form-level error."""
    lines: list[OrderLineRequest] = []
    first_row_of: dict[str, int] = {}
    for position, row in enumerate(rows, start=1):
        row.error = _row_error(row)
        sku = row.normalised_sku
        if row.error is None and sku in first_row_of:
            row.error = f"El SKU {sku} ya está en la línea {first_row_of[sku]}: sumá las cantidades en una sola línea."
        first_row_of.setdefault(sku, position)
        if row.error is None:
            lines.append(OrderLineRequest(sku, int(row.quantity)))
    if not rows:
        return lines, "Cargá al menos una línea con SKU y cantidad."
    return lines, None


def _row_error(row: LineRow) -> str | None:
    if has_control_characters(row.sku) or has_control_characters(row.quantity):
        return CONTROL_CHARACTERS
    if not row.sku:
        return "Falta el SKU."
    if len(row.sku) > MAX_SKU_LENGTH:
        return f"El SKU no puede tener más de {MAX_SKU_LENGTH} caracteres."
    if not row.quantity:
        return "Falta la cantidad."
    return quantity_error(row.quantity, MAX_LINE_QUANTITY)


def quantity_error(text: str, maximum: int) -> str | None:
    """Why typed text is not a quantity from 1 to maximum (ASCII digits only), or None when it is one."""
    if not _DIGITS.fullmatch(text):
        return "La cantidad debe ser un número entero positivo, sin decimales ni signos."
    digits = text.lstrip("0") or "0"
    # Compare lengths first: int() of a few thousand digits raises, and nothing that long is a quantity.
    quantity = int(digits) if len(digits) <= len(str(maximum)) else maximum + 1
    if quantity == 0:
        return "La cantidad debe ser mayor que cero."
    if quantity > maximum:
        # An input sanity bound (commands.MAX_LINE_QUANTITY, dispatch.MAX_QUANTITY), not a business limit.
        return f"La cantidad supera el máximo de {maximum:,} unidades por línea.".replace(",", ".")
    return None


def padded(rows: list[LineRow], minimum: int = MIN_ROWS) -> list[LineRow]:
    """The rows plus empty ones up to the minimum, so the salesperson always has room to type."""
    return rows + [LineRow() for _ in range(max(0, minimum - len(rows)))]


class CancelForm(RefusesControlCharacters, FlaskForm):
    """Why the order is cancelled (required: the audit row and the order's story keep it)."""

    class Meta:
        csrf = False  # CSRFProtect guards every POST of the app (nexo/extensions.py)

    reason = TextAreaField(
        validators=[
            DataRequired("Escribí el motivo de la anulación."),
            Length(max=MAX_REASON, message=f"Hasta {MAX_REASON} caracteres."),
        ]
    )


@dataclass
class DispatchRow:
    """One line of the dispatch form as typed: a SKU of the order and how many units leave now."""

    sku: str = ""
    quantity: str = ""
    error: str | None = None


@dataclass
class DispatchInput:
    """The dispatch form read: its rows, what leaves (None: everything that remains) and a form-level error."""

    rows: list[DispatchRow]
    lines: tuple[ShipLine, ...] | None
    error: str | None = None


def read_dispatch(formdata) -> DispatchInput:
    """The posted `lines-N-sku` / `lines-N-quantity` (CONTRACT.md: none at all means everything that remains).

    A line left empty does not leave now; 0, a sign, decimals, other digits or an absurd number mark
    their line (400). Whether the SKU is in the order and how much remains is dispatch_order's to say.
    """
    cells: dict[int, dict[str, str]] = {}
    for key in formdata:
        match = _LINE_KEY.fullmatch(key)
        if match:
            cells.setdefault(int(match.group(1)), {})[match.group(2)] = formdata.get(key, "")
    if not cells:
        return DispatchInput([], None)
    rows = [
        DispatchRow(cells[i].get("sku", "").strip(TRIMMED), cells[i].get("quantity", "").strip(TRIMMED)) for i in sorted(cells)
    ]
    for row in rows:
        row.error = _dispatch_row_error(row)
    if any(row.error for row in rows):
        return DispatchInput(rows, None, "Revisá las líneas marcadas: no se registró nada.")
    lines = tuple(ShipLine(row.sku, int(row.quantity)) for row in rows if row.quantity)
    if not lines:
        return DispatchInput(rows, None, "Indicá cuántas unidades salen de al menos una línea.")
    return DispatchInput(rows, lines)


def _dispatch_row_error(row: DispatchRow) -> str | None:
    if has_control_characters(row.sku) or has_control_characters(row.quantity):
        return CONTROL_CHARACTERS
    if not row.quantity:
        return None  # this line does not leave now
    if not row.sku or len(row.sku) > MAX_SKU_LENGTH:
        return "Falta el SKU de la línea."
    return quantity_error(row.quantity, MAX_DISPATCH_QUANTITY)
