"""Shape of the credit officer's forms (CSRF comes with FlaskForm)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask_wtf import FlaskForm
from wtforms import Field, HiddenField, IntegerField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length, NumberRange, Optional, ValidationError

from nexo.credit.payments import MAX_AMOUNT_CENTS
from nexo.form_input import RefusesControlCharacters
from nexo.formatting import MoneyInputError, parse_ars

NOTE_MAX = 500
REFERENCE_MAX = 200


class ApproveForm(RefusesControlCharacters, FlaskForm):
    """Optional note, plus the figures the officer saw (so a change since then is not approved silently)."""

    note = TextAreaField("Nota (opcional)", validators=[Optional(), Length(max=NOTE_MAX)])
    seen_exposure_cents = IntegerField(validators=[Optional(), NumberRange(min=0)])
    seen_limit_cents = IntegerField(validators=[Optional(), NumberRange(min=0)])
    filters = HiddenField()


class RejectForm(RefusesControlCharacters, FlaskForm):
    """The reason is required (CU-02): the salesperson reads it on the order page."""

    reason = TextAreaField(
        "Motivo del rechazo",
        validators=[DataRequired("Escribí el motivo del rechazo: el vendedor lo va a leer."), Length(max=NOTE_MAX)],
    )
    filters = HiddenField()


TIERS = ("PLATINO", "REGULAR")


@dataclass(frozen=True)
class QueueFilters:
    """The queue's GET filters; a malformed value is ignored rather than refused (it is only a view)."""

    client_id: uuid.UUID | None = None
    tier: str | None = None
    salesperson_id: int | None = None

    @classmethod
    def from_args(cls, args) -> QueueFilters:
        """Read `client`, `tier` and `salesperson` from a query string mapping."""
        try:
            client_id = uuid.UUID(args.get("client", ""))
        except ValueError:
            client_id = None
        tier = args.get("tier", "").strip().upper()
        salesperson = args.get("salesperson", "").strip()
        return cls(
            client_id,
            tier if tier in TIERS else None,
            int(salesperson) if salesperson.isdigit() and len(salesperson) < 12 else None,
        )

    def query_args(self) -> dict:
        """The filters as query-string arguments for url_for (only the ones set)."""
        args = {"client": self.client_id, "tier": self.tier, "salesperson": self.salesperson_id}
        return {key: str(value) for key, value in args.items() if value is not None}

    def __bool__(self) -> bool:
        return bool(self.query_args())


class Pesos:
    """WTForms validator: the field is pesos as people write them (nexo.formatting.parse_ars), from `minimum` cents."""

    def __init__(self, minimum: int):
        self.minimum = minimum

    def __call__(self, form, field: Field) -> None:
        try:
            cents = parse_ars(field.data or "")
        except MoneyInputError as error:
            raise ValidationError(str(error)) from error
        if cents < self.minimum:
            raise ValidationError("El importe tiene que ser mayor que cero.")
        if cents > MAX_AMOUNT_CENTS:
            raise ValidationError("El importe es demasiado grande.")


class PaymentForm(RefusesControlCharacters, FlaskForm):
    """A client's payment: amount in pesos (more than zero) and its reference (the receipt, the transfer).

    `payment_id` is drawn new with each form: the payment's Idempotency-Key, so the same form sent twice
    (a double click, a lost answer) records one payment (ADR-005's rule, for payments).
    """

    amount = StringField(validators=[DataRequired("Escribí el importe pagado."), Pesos(minimum=1)])
    reference = StringField(
        validators=[
            DataRequired("Escribí la referencia del pago (recibo, transferencia)."),
            Length(max=REFERENCE_MAX, message=f"Hasta {REFERENCE_MAX} caracteres."),
        ]
    )
    payment_id = HiddenField()


class LimitForm(RefusesControlCharacters, FlaskForm):
    """A new credit limit in pesos (0 allowed: no credit) and the reason, required (audited)."""

    limit = StringField(validators=[DataRequired("Escribí el nuevo límite."), Pesos(minimum=0)])
    reason = TextAreaField(
        validators=[DataRequired("Escribí el motivo del cambio."), Length(max=NOTE_MAX, message=f"Hasta {NOTE_MAX} caracteres.")]
    )
