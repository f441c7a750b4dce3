"""The catalogue's result cards and tag links, written in Python (marketplace/catalogue_render.py):
what a searcher reads on each card and beside them, and that nothing a publisher typed can
become markup."""

from __future__ import annotations

import html
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from django.urls import reverse

from config.benchmarks.marketplace import SeedPlugin, catalogue_seed
from marketplace.catalogue_render import age_text
from tests.marketplace.conftest import client_for

pytestmark = pytest.mark.django_db


def _page(market: dict[str, Any], *entries: SeedPlugin, **params: str) -> str:
    with transaction.atomic():
        catalogue_seed(team=market["acme"], entries=list(entries))
    page = client_for(market["reviewer"]).get(reverse("marketplace:catalogue"), params)
    assert page.status_code == 200
    return page.content.decode()


def _cards(market: dict[str, Any], *entries: SeedPlugin, **params: str) -> str:
    body = _page(market, *entries, **params)
    return body.split('<ul class="mp-results">', 1)[1].split("</ul>", 1)[0]


def _tag_links(market: dict[str, Any], *entries: SeedPlugin, **params: str) -> str:
    body = _page(market, *entries, **params)
    return body.split('<aside class="mp-facets"', 1)[1].split("</aside>", 1)[0]


def test_a_card_tells_name_version_summary_category_team_installs_rating_age_and_tags(
        market: dict[str, Any]) -> None:
    cards = _cards(market, SeedPlugin(
        name="shift-planner", summary="Plans staff shifts for the week.", category="scheduling",
        tags=("rota", "staff planning"), installs=1234, rating=4.25, ratings=12, days_ago=95))
    text = html.unescape(cards)

    assert '<a href="/marketplace/p/shift-planner/">shift-planner</a>' in cards
    assert '<span class="muted small">1.0.0</span>' in cards
    assert "Plans staff shifts for the week." in text
    assert "<span>Scheduling</span>" in cards and "<span>by Acme</span>" in cards
    assert "1,234 installs" in text and "4.3 (12)" in text
    assert "updated 3\u00a0months ago" in text
    assert '<a class="badge" href="?tag=staff%20planning">staff planning</a>' in cards
    assert '<span class="badge">' not in cards  # public plugins carry no visibility badge


def test_an_unrated_team_plugin_says_so_and_shows_its_visibility(market: dict[str, Any]) -> None:
    cards = _cards(market, SeedPlugin(name="team-tool", summary="x" * 300, installs=1,
                                      visibility="team"))
    text = html.unescape(cards)

    assert "not rated yet" in text and "1 install<" in cards
    assert '<span class="badge">team</span>' in cards
    assert "x" * 259 + "…" in text and "x" * 261 not in text  # long summaries are cut


def test_what_a_publisher_typed_is_shown_as_text_never_as_markup(market: dict[str, Any]) -> None:
    cards = _cards(market, SeedPlugin(
        name="safe-name", summary='<script>alert("summary")</script>',
        tags=('"><img src=x onerror=alert(1)>',)), q="safe")

    assert "<script>" not in cards and "<img" not in cards
    assert "&lt;script&gt;alert(&quot;summary&quot;)&lt;/script&gt;" in cards


def test_the_tag_links_count_plugins_and_keep_the_search_category_and_order(
        market: dict[str, Any]) -> None:
    links = _tag_links(market,
                       SeedPlugin(name="rota-a", summary="Staff rota.", tags=("rota", "staff")),
                       SeedPlugin(name="rota-b", summary="Another rota.", tags=("rota",)),
                       q="staff rota", category="scheduling", sort="installs", tag="rota")

    keep = "?q=staff%20rota&amp;category=scheduling&amp;sort=installs"
    assert f'<li><a href="{keep}">All tags</a></li>' in links  # leaves the tag being browsed
    assert (f'<li><a href="{keep}&amp;tag=rota" aria-current="true">rota</a> '
            '<span class="muted small">2</span></li>') in links
    assert f'<a href="{keep}&amp;tag=staff">staff</a> <span class="muted small">1</span>' in links
    assert links.index(">rota<") < links.index(">staff<")  # the most used first


def test_without_tags_the_list_says_so(market: dict[str, Any]) -> None:
    links = _tag_links(market)

    assert '<li class="muted small">No tags yet</li>' in links
    assert "All tags" not in links


def test_a_hostile_tag_is_a_link_of_text(market: dict[str, Any]) -> None:
    links = _tag_links(market, SeedPlugin(name="odd-tags", summary="Odd.",
                                          tags=('"><script>x</script>',)))

    assert "<script>" not in links
    assert ('href="?q=&amp;category=&amp;sort=relevance&amp;tag=%22%3E%3Cscript%3Ex%3C/script%3E"'
            in links)
    assert "&quot;&gt;&lt;script&gt;x&lt;/script&gt;</a>" in links


@pytest.mark.parametrize(("seconds", "said"), [
    (5, "just now"), (60, "1\u00a0minute ago"), (7200, "2\u00a0hours ago"),
    (86400 * 3, "3\u00a0days ago"), (86400 * 14, "2\u00a0weeks ago"),
    (86400 * 400, "1\u00a0year ago"),
])
def test_ages_are_said_with_their_largest_whole_unit(seconds: int, said: str) -> None:
    now = datetime(2026, 11, 24, 12, 0)
    assert age_text(now - timedelta(seconds=seconds), now) == said
