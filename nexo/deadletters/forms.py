"""Shape of the dead-letter forms and of the list's query string (validation only, no business rules)."""

from __future__ import annotations

import uuid

from flask_wtf import FlaskForm
from wtforms import Form, HiddenField, IntegerField, SelectField, StringField, TextAreaField
from wtforms.fields import DateField
from wtforms.fields.choices import SelectChoice  # type: ignore[attr-defined]  # new in WTForms 3.3; types-WTForms 3.2 lacks it
from wtforms.validators import DataRequired, InputRequired, Length, NumberRange, Optional, ValidationError

from nexo.deadletters.queries import STATUSES
from nexo.form_input import RefusesControlCharacters
from nexo.vocabulary import DEAD_LETTER_STATUS, DESTINATION

# The filters offer the statuses in words (nexo/vocabulary.py); the query string keeps the codes.
STATUS_LABELS = {status: DEAD_LETTER_STATUS[status] for status in STATUSES}
REASON_MAX = 1000


def _strip(value):
    return value.strip() if isinstance(value, str) else value


def _choices(labels: dict, blank: str | None = None) -> list[SelectChoice]:
    choices = [SelectChoice("", blank)] if blank is not None else []
    return choices + [SelectChoice(value, label) for value, label in labels.items()]


def _uuid(_form, field):
    if field.data:
        try:
            uuid.UUID(field.data)
        except ValueError:
            raise ValidationError("Cliente inválido.") from None


class ListQuery(RefusesControlCharacters, Form):
    """The list's filters and pagination, read from the query string (GET, so no CSRF)."""

    class Meta:
        # WTForms' own messages ("Not a valid integer value", a range) in Spanish, from its bundled catalog.
        locales = ("es",)

    destination = SelectField("Destino", choices=_choices(DESTINATION, "Todos"), default="")
    status = SelectField("Estado", choices=_choices(STATUS_LABELS, "Todos"), default="")
    signature = StringField("Tipo de error", filters=[_strip], validators=[Optional(), Length(max=200)])
    client = StringField("Cliente", filters=[_strip], validators=[Optional(), _uuid])
    from_date = DateField("Desde", validators=[Optional()])
    to_date = DateField("Hasta", validators=[Optional()])
    page = IntegerField("Página", default=1, validators=[Optional(), NumberRange(min=1, max=100_000)])
    size = IntegerField("Por página", default=50, validators=[Optional(), NumberRange(min=1, max=200)])


class ReplayForm(RefusesControlCharacters, FlaskForm):
    """Replay one dead letter; the note is optional."""

    note = TextAreaField("Nota (opcional)", filters=[_strip], validators=[Optional(), Length(max=REASON_MAX)])


class DiscardForm(RefusesControlCharacters, FlaskForm):
    """Discard one dead letter; the reason is what the order page and the audit log will show."""

    reason = TextAreaField(
        "Motivo del descarte",
        filters=[_strip],
        validators=[DataRequired("Escribí el motivo del descarte."), Length(max=REASON_MAX)],
    )


class CheckKeyForm(RefusesControlCharacters, FlaskForm):
    """Ask the destination whether it already applied this Idempotency-Key (CSRF only)."""


class BulkForm(RefusesControlCharacters, FlaskForm):
    """Confirm a group action: exactly the ids the preview showed, and how many they were."""

    action = SelectField(
        "Acción", choices=_choices({"replay": "Reprocesar", "discard": "Descartar"}), validators=[InputRequired()]
    )
    destination = SelectField("Destino", choices=_choices(DESTINATION), validators=[InputRequired()])
    signature = HiddenField(validators=[Optional(), Length(max=200)])
    ids = HiddenField(validators=[DataRequired("No hay entregas para procesar.")])
    expected_count = IntegerField(validators=[InputRequired(), NumberRange(min=1)])
    # No Optional() here: it would stop the chain before validate_reason can demand a discard reason.
    reason = TextAreaField("Motivo", filters=[_strip], validators=[Length(max=REASON_MAX)])

    def validate_ids(self, field):
        """Comma-separated positive integers, as the preview wrote them."""
        try:
            ids = [int(part) for part in field.data.split(",") if part.strip()]
        except ValueError:
            raise ValidationError("Lista de entregas inválida.") from None
        if not ids or any(i < 1 for i in ids):
            raise ValidationError("Lista de entregas inválida.")
        self.id_list = sorted(set(ids))

    def validate_expected_count(self, field):
        """The preview's count must match the ids it carried."""
        ids = getattr(self, "id_list", None)
        if ids is not None and field.data != len(ids):
            raise ValidationError("La cantidad confirmada no coincide con la vista previa.")

    def validate_reason(self, field):
        """A group discard needs a reason, like a single one."""
        if self.action.data == "discard" and not field.data:
            raise ValidationError("Escribí el motivo del descarte.")
