"""The HTML of the catalogue's result cards, built in Python.

Twenty result cards through the template engine (each with a dozen variables, filters and a
URL) cost two thirds of a catalogue search's CPU, more than embedding the query and running
both rankings together; the thirty tag links beside them cost another tenth. The markup lives
here, once, as the board's cards live in projects/board_render.py; the page, its filters and
pagination stay in templates/marketplace/catalogue.html. Every value is escaped here.
"""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING
from urllib.parse import quote

from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from marketplace.models import Plugin

if TYPE_CHECKING:
    from marketplace.selectors.catalogue import SearchParams

CARD = ('<li class="card mp-result">\n'
        '  <h3><a href="{url}">{name}</a>\n'
        '    <span class="muted small">{version}</span>\n'
        '    {visibility}</h3>\n'
        '  <p>{summary}</p>\n'
        '  <div class="mp-meta">\n'
        '    <span>{category}</span>\n'
        '    <span>by {team}</span>\n'
        '    <span>{installs} install{installs_plural}</span>\n'
        '    <span>{rating}</span>\n'
        '    {updated}\n'
        '    {tags}\n'
        '  </div>\n'
        '</li>\n')
SUMMARY_CHARS = 260
# The portal speaks English (LANGUAGE_CODE "en-us"): numbers and ages are formatted directly
# rather than through the locale-aware humanize filters, a third of a card's cost each.
AGE_UNITS = ((365 * 86400, "year"), (30 * 86400, "month"), (7 * 86400, "week"),
             (86400, "day"), (3600, "hour"), (60, "minute"))


def age_text(moment: datetime, now: datetime) -> str:
    """"3 months ago", "just now": the largest whole unit, as humanize's naturaltime says it."""
    seconds = (now - moment).total_seconds()
    for size, unit in AGE_UNITS:
        if seconds >= size:
            count = int(seconds // size)
            return f"{count}\u00a0{unit}{'s' if count != 1 else ''} ago"
    return "just now"


def _rating(plugin: Plugin) -> str:
    if not plugin.rating_count:
        return "not rated yet"
    return (f'<span class="mp-stars" aria-hidden="true">★</span> '
            f"{_one_decimal(plugin.rating_avg)} ({plugin.rating_count})")


def _one_decimal(value: float) -> str:
    # Half up, as the floatformat filter on the plugin's page rounds it (4.25 -> 4.3).
    return str(Decimal(str(value)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _url_value(value: str) -> str:
    # quote(safe="/") is what the template's urlencode filter did.
    return escape(quote(value, safe="/"))


def _tags(plugin: Plugin) -> str:
    return "".join(f'<a class="badge" href="?tag={_url_value(tag)}">{escape(tag)}</a>'
                   for tag in plugin.tags)


def _summary(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else Truncator(text).chars(SUMMARY_CHARS)


def result_card_html(plugin: Plugin, plugin_url_prefix: str, now: datetime) -> str:
    version = plugin.latest_version.version if plugin.latest_version else ""
    return CARD.format(
        url=f"{plugin_url_prefix}{escape(plugin.normalized_name)}/",
        name=escape(plugin.name), version=escape(version),
        visibility=(f'<span class="badge">{escape(plugin.visibility)}</span>'
                    if plugin.visibility != Plugin.Visibility.PUBLIC else ""),
        summary=escape(_summary(plugin.summary)),
        category=escape(plugin.get_category_display()), team=escape(plugin.team.name),
        installs=f"{plugin.install_count:,}",
        installs_plural="" if plugin.install_count == 1 else "s", rating=_rating(plugin),
        updated=(f"<span>updated {age_text(plugin.updated_at, now)}</span>"
                 if plugin.updated_at else ""),
        tags=_tags(plugin))


def result_cards_html(results: list[Plugin]) -> SafeString:
    """The result cards of one page of the catalogue, in order."""
    prefix = reverse("marketplace:plugin", args=["x"])[:-len("x/")]
    now = timezone.now()
    return SafeString("".join(result_card_html(plugin, prefix, now) for plugin in results))


def tag_facets_html(tags: list[tuple[str, int]], params: SearchParams) -> SafeString:
    """The most used tags beside the results, with their counts: each link keeps the words,
    category and order of the search, and the tag being browsed is marked as current."""
    # Category and sort are one of their choices (clean_params): nothing in them to quote.
    keep = f"?q={_url_value(params.q)}&amp;category={params.category}&amp;sort={params.sort}"
    items = [f'<li><a href="{keep}">All tags</a></li>'] if params.tag else []
    current = ' aria-current="true"'
    items += [f'<li><a href="{keep}&amp;tag={_url_value(tag)}"'
              f'{current if tag == params.tag else ""}>{escape(tag)}</a> '
              f'<span class="muted small">{count}</span></li>' for tag, count in tags]
    return SafeString("\n".join(items or ['<li class="muted small">No tags yet</li>']))
