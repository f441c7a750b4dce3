"""Small display helpers for the marketplace templates."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.safestring import SafeString

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for examples and outputs (autoescaped by the template as usual)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter
def sentence(value: Any) -> str:
    """A reason someone typed, as the end of a sentence: its own stop kept, one added when it
    has none ("... front desk." is not shown as "front desk..")."""
    text = " ".join(str(value or "").split())
    return text if not text or text[-1] in ".!?…" else f"{text}."


@register.filter
def stars(value: float | int | None) -> str:
    rounded = int(round(float(value or 0)))
    return "★" * rounded + "☆" * (5 - rounded)


@register.filter
def result_cards(results: list[Any]) -> SafeString:
    """A page of catalogue results as HTML (marketplace/catalogue_render.py: in Python, as the
    template engine cost two thirds of a search's CPU)."""
    from marketplace.catalogue_render import result_cards_html

    return result_cards_html(results)


@register.simple_tag
def tag_facets(tags: list[tuple[str, int]], params: Any) -> SafeString:
    """The catalogue's tag links with their counts (built in Python, as the result cards)."""
    from marketplace.catalogue_render import tag_facets_html

    return tag_facets_html(tags, params)
