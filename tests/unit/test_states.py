"""nexo/states.py: a state a partial index needs as a constant is spelled safely, once."""

from __future__ import annotations

from enum import StrEnum

import pytest

from nexo.states import DISPATCHABLE, DeadLetterStatus, sql_constant


def test_states_are_spelled_as_sql_constants_by_their_values():
    assert sql_constant(DeadLetterStatus.PENDING) == "'pending'"
    assert sql_constant(*DISPATCHABLE) == "'CONFIRMADO', 'DESPACHADO_PARCIAL'"


def test_a_spelling_that_would_need_escaping_is_refused():
    class Odd(StrEnum):
        QUOTED = "it's"

    with pytest.raises(ValueError, match="not a state's spelling"):
        sql_constant(Odd.QUOTED)
