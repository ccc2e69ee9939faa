"""Password rules (ADR-018): at least 12 characters and not a common password; one-time passwords.

The common passwords are the 30,000 of zxcvbn's frequency list (PyPI `zxcvbn`, the Python port of
Dropbox's estimator), loaded on first use: a list kept by a maintained package, not one of ours.
"""

from __future__ import annotations

import secrets
from functools import lru_cache

from werkzeug.security import generate_password_hash

MIN_LENGTH = 12
MAX_LENGTH = 256
# A one-time password: 14 characters of an alphabet without look-alikes (0/O, 1/l/I), about 80 bits (ADR-018).
_ONE_TIME_ALPHABET = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@lru_cache(maxsize=1)
def _common() -> frozenset[str]:
    from zxcvbn.frequency_lists import FREQUENCY_LISTS  # noqa: PLC0415 (1 MB of words: only when a password is set)

    return frozenset(FREQUENCY_LISTS["passwords"])


def weakness(password: str, *, username: str = "") -> str | None:
    """Why a new password is refused (Spanish, for the form), or None when it is acceptable."""
    if len(password) < MIN_LENGTH:
        return f"La contraseña debe tener al menos {MIN_LENGTH} caracteres."
    if len(password) > MAX_LENGTH:
        return f"La contraseña puede tener hasta {MAX_LENGTH} caracteres."
    folded = password.lower()
    if folded in _common() or folded.strip() in _common():
        return "Esa contraseña está entre las más usadas: elegí otra."
    if username and username.lower() in folded:
        return "La contraseña no puede contener tu nombre de usuario."
    if len(set(password)) < 4:
        return "La contraseña repite demasiado los mismos caracteres."
    return None


def hash_password(password: str) -> str:
    """The stored form of a password (werkzeug's scrypt)."""
    return generate_password_hash(password)


def one_time_password() -> str:
    """A random password for a new or reset account, shown once and changed at first login."""
    return "".join(secrets.choice(_ONE_TIME_ALPHABET) for _ in range(14))
