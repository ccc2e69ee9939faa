"""Shape of the credit officer's forms (CSRF comes with FlaskForm)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from flask_wtf import FlaskForm
from wtforms import HiddenField, IntegerField, TextAreaField
from wtforms.validators import DataRequired, Length, NumberRange, Optional

from nexo.form_input import RefusesControlCharacters

NOTE_MAX = 500


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
