"""How the figures of "How generation is going" are written for people."""

from __future__ import annotations

from datetime import timedelta

from django import template

from autocoder.engine.escapes import problem_words

register = template.Library()

NO_DATA = "–"


@register.filter
def percent(rate: float | None) -> str:
    """0.75 -> "75%"; no data -> a dash."""
    return NO_DATA if rate is None else f"{rate:.0%}"


@register.filter
def decimal(value: float | None, places: int = 1) -> str:
    return NO_DATA if value is None else f"{value:,.{places}f}".rstrip("0").rstrip(".")


@register.filter
def span(duration: timedelta | None) -> str:
    """A duration in words a person reads at a glance: "45 s", "12 min", "3.5 h"."""
    if duration is None:
        return NO_DATA
    seconds = duration.total_seconds()
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@register.filter
def loop_kind(kind: str) -> str:
    """A loop-detector pattern as people say it: "The same tests keep failing"."""
    words = problem_words(kind)
    return words[:1].upper() + words[1:]
