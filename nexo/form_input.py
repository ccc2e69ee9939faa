"""Text people send in forms: no control characters, checked once here for every form (guarantee 17).

A NUL byte or another control character (Unicode category Cc) is never part of an SKU, a name, a
note or a reason; psycopg refuses NUL outright and Postgres would store the others where they break
logs and pages. Two layers:
- every form of the app validates each of its fields with `NoControlCharacters` (the mixin
  `RefusesControlCharacters` adds it to every field, so a new field cannot forget it): 400, field marked;
- the last line: the web app's connections dump Python strings through `GuardedStrDumper`, so a
  control character that some route did not validate still never reaches the database; the error
  pages turn the refusal into a 400.
A textarea may keep what typing produces there: tab, carriage return and line feed. A one-line field
may have them only at its ends (a paste from a spreadsheet), where they are trimmed like spaces.
"""

from __future__ import annotations

import re
from typing import Any

import psycopg
from psycopg.types.string import StrDumperUnknown
from wtforms import Form, TextAreaField
from wtforms.validators import ValidationError

# Unicode category Cc: U+0000-U+001F and U+007F-U+009F.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINE_BREAKS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# What a one-line field may carry at its ends, trimmed and never stored: the white space str.strip()
# removes (no-break and other Unicode spaces included), except the control characters other than
# tab, CR and LF, which str.strip() would silently drop (\x0b, \x0c, \x1c-\x1f, \x85).
TRIMMED = " \t\r\n\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
MESSAGE = "Tiene caracteres de control no permitidos (por ejemplo un byte nulo); escribilo de nuevo."


def has_control_characters(text: str, *, multiline: bool = False) -> bool:
    """True when text holds a control character (tab, CR and LF allowed when multiline, or at the ends)."""
    if multiline:
        return _CONTROL_BUT_LINE_BREAKS.search(text) is not None
    return _CONTROL.search(text.strip(TRIMMED)) is not None


class ControlCharacterRefused(ValueError):
    """A string with a control character was about to be sent to the database."""


class NoControlCharacters:
    """WTForms validator: refuse a field whose submitted text holds a control character."""

    def __init__(self, multiline: bool = False, message: str = MESSAGE):
        self.multiline = multiline
        self.message = message

    def __call__(self, form, field) -> None:
        # raw_data is what was sent, before any filter (str.strip() would hide \x1c-\x1f at the ends).
        if any(
            isinstance(value, str) and has_control_characters(value, multiline=self.multiline) for value in field.raw_data or ()
        ):
            raise ValidationError(self.message)


class RefusesControlCharacters(Form):
    """Form mixin: every field of the form gets NoControlCharacters (multiline for textareas)."""

    def validate(self, extra_validators=None) -> bool:
        """Validate as usual, with the control-character check added to each field."""
        extra = {name: list(validators) for name, validators in (extra_validators or {}).items()}
        for name, field in self._fields.items():
            extra.setdefault(name, []).append(NoControlCharacters(multiline=isinstance(field, TextAreaField)))
        return super().validate(extra_validators=extra)


class GuardedStrDumper(StrDumperUnknown):
    """psycopg's default str dumper, refusing control characters other than tab, CR and LF."""

    def dump(self, obj: str):
        """The text to send, or ControlCharacterRefused."""
        if has_control_characters(obj, multiline=True):
            raise ControlCharacterRefused("control character in a query parameter")
        return super().dump(obj)


def refuse_control_characters(conn: psycopg.Connection[Any]) -> None:
    """Pool `configure` callback: this connection dumps str parameters through GuardedStrDumper."""
    conn.adapters.register_dumper(str, GuardedStrDumper)
