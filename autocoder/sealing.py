"""Secrets the portal must keep in its database (a team's LLM API key) are stored sealed.

Sealed means encrypted and authenticated (Fernet: AES-128-CBC + HMAC-SHA256) with a key
derived from SECRET_KEY, so a database dump or backup alone does not give the keys away.
Rotation follows Django's own: move the old SECRET_KEY to SECRET_KEY_FALLBACKS and values
sealed under it still open; each is sealed again under the new key when it is next saved, or
all at once by `manage.py secrets_reseal` (autocoder/resealing.py), which finds them through
the columns registered here with `sealed_column_register`.
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.utils.crypto import salted_hmac
from django.utils.encoding import force_bytes

PREFIX = "sealed:v1:"
_SALT = "autocoder.sealing"


@dataclass(frozen=True)
class SealedColumn:
    """A model field that holds sealed values ("app_label.ModelName", field name), in the rows
    that match `where` (field, value pairs). Empty values are left alone."""

    model: str
    field: str
    where: tuple[tuple[str, object], ...] = ()


_SEALED_COLUMNS: dict[SealedColumn, None] = {}


def sealed_column_register(model: str, field: str, **where: object) -> None:
    """Declare, next to the model, a field that stores `seal()`ed text (for re-sealing);
    `where` narrows it to the rows that hold secrets (`secret=True`)."""
    _SEALED_COLUMNS[SealedColumn(model, field, tuple(sorted(where.items())))] = None


def sealed_columns() -> tuple[SealedColumn, ...]:
    return tuple(_SEALED_COLUMNS)


class UnsealError(Exception):
    """A stored secret cannot be opened with SECRET_KEY or any of its fallbacks."""


def _fernet_key(secret: str) -> bytes:
    digest = salted_hmac(_SALT, "fernet", secret=secret, algorithm="sha256").digest()
    return base64.urlsafe_b64encode(digest)


@functools.lru_cache(maxsize=4)
def _fernet(secret: str, fallbacks: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(_fernet_key(key)) for key in (secret, *fallbacks)])


def fernet_for(secret: str, fallbacks: tuple[str, ...] = ()) -> MultiFernet:
    """Seals under `secret`; opens what was sealed under it or any of `fallbacks`."""
    return _fernet(secret, fallbacks)


def _current() -> MultiFernet:
    return _fernet(settings.SECRET_KEY, tuple(getattr(settings, "SECRET_KEY_FALLBACKS", ())))


def seal(plain: str) -> str:
    """The stored form of `plain`; the empty string stays empty (nothing to hide)."""
    if not plain:
        return ""
    return PREFIX + _current().encrypt(force_bytes(plain)).decode("ascii")


def unseal(stored: str) -> str:
    if not stored:
        return ""
    if not stored.startswith(PREFIX):
        raise UnsealError("the stored value is not sealed")
    try:
        return _current().decrypt(stored[len(PREFIX):].encode("ascii")).decode("utf-8")
    except (InvalidToken, UnicodeError) as exc:
        raise UnsealError("the stored value was sealed under another SECRET_KEY") from exc
