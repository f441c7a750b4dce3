"""The quality report's words on every page that shows it (templates/projects/partials/
quality.html; autocoder/quality/pages.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from autocoder.quality.pages import page_words

register = template.Library()


@register.filter
def quality_page(quality: Any) -> Any:
    """A stored quality dict with its words worked out again from its figures."""
    return page_words(quality) if isinstance(quality, Mapping) else quality
