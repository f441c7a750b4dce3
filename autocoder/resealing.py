"""Seal every stored secret again under the current SECRET_KEY (`manage.py secrets_reseal`).

After a key change the old key sits in SECRET_KEY_FALLBACKS so that sealed values still open;
this rewrites each value that opens only with a fallback (or with one of `old_keys`) under the
current key, so the fallback can then be removed. Values already sealed under the current key
are not touched; values no key opens are counted and left as they are (someone has to enter
them again). Nothing here logs or returns a secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from cryptography.fernet import InvalidToken
from django.apps import apps
from django.conf import settings

from autocoder.sealing import PREFIX, SealedColumn, fernet_for, sealed_columns


@dataclass
class ResealReport:
    resealed: int = 0
    current: int = 0
    # "llm.SiteModelConfig 1 api_key_sealed": where a value no key opens is stored.
    unreadable: list[str] = field(default_factory=list)


def sealed_values_reseal(*, old_keys: Iterable[str] = (), dry_run: bool = False
                         ) -> ResealReport:
    """Seal under SECRET_KEY every registered value that opens with SECRET_KEY_FALLBACKS or
    `old_keys` only. `dry_run` counts without writing."""
    current = settings.SECRET_KEY
    others = tuple(key for key in (*settings.SECRET_KEY_FALLBACKS, *old_keys) if key != current)
    report = ResealReport()
    for column in sealed_columns():
        _reseal_column(column, current, others, report, dry_run=dry_run)
    return report


def _reseal_column(column: SealedColumn, current: str, others: tuple[str, ...],
                   report: ResealReport, *, dry_run: bool) -> None:
    model = apps.get_model(column.model)
    rows = model._base_manager.filter(**dict(column.where)).exclude(**{column.field: ""})
    for pk, stored in rows.values_list("pk", column.field).iterator():
        outcome = _resealed(stored, current, others)
        if outcome == CURRENT:
            report.current += 1
        elif outcome is None:
            report.unreadable.append(f"{column.model} {pk} {column.field}")
        # Written only if nobody saved a new value meanwhile (that one is sealed under the
        # current key already).
        elif dry_run or model._base_manager.filter(
                pk=pk, **{column.field: stored}).update(**{column.field: outcome}):
            report.resealed += 1
        else:
            report.current += 1


CURRENT = "current"


def _resealed(stored: str, current: str, others: tuple[str, ...]) -> str | None:
    """CURRENT if `stored` opens with the current key; its text sealed under the current key if
    it opens with one of `others`; None if nothing opens it."""
    if not stored.startswith(PREFIX):
        return None
    token = stored.removeprefix(PREFIX).encode("ascii", "replace")
    try:
        fernet_for(current).decrypt(token)
        return CURRENT
    except InvalidToken:
        pass
    try:
        return PREFIX + fernet_for(current, others).rotate(token).decode("ascii")
    except InvalidToken:
        return None
