"""Small display helpers for the marketplace templates."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for examples and outputs (autoescaped by the template as usual)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter
def stars(value: float | int | None) -> str:
    rounded = int(round(float(value or 0)))
    return "★" * rounded + "☆" * (5 - rounded)
