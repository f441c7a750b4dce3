"""Catalogue search on a small fixed catalogue: relevance of the hybrid ranking (the real MiniLM
embedder and PostgreSQL full text), filters, sorts and pagination.

The catalogue is seeded straight into the tables
(config.benchmarks.marketplace.catalogue_seed) with the same search vector and embedding a
publication computes; publishing twenty plugins through the sandbox would test the sandbox
again, not the search."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from config.benchmarks.marketplace import SeedPlugin, catalogue_seed
from marketplace.models import Plugin, PluginVersion
from marketplace.selectors.catalogue import SearchParams, catalogue_search, clean_params
from marketplace.selectors.visibility import viewer_for
from marketplace.services.listing import plugin_listing_refresh
from marketplace.services.submissions import summary_embedding_of
from tests.marketplace.conftest import client_for

pytestmark = pytest.mark.django_db

CATALOGUE = [
    SeedPlugin("shift-planner", "Plans weekly staff shifts for a shop or cafe so every opening"
               " hour is covered and nobody works two shifts in a row.", "scheduling",
               ("staff", "calendar"), installs=900, rating=4.6, ratings=30, days_ago=40),
    SeedPlugin("invoice-checker", "Checks supplier invoices against purchase orders and flags"
               " wrong totals, duplicates and missing VAT.", "finance", ("money",),
               installs=300, rating=4.1, ratings=12, days_ago=3),
    SeedPlugin("csv-cleaner", "Cleans messy CSV files: trims spaces, fixes dates, removes"
               " duplicate rows and normalises column names.", "data", ("csv", "import"),
               installs=2500, rating=4.8, ratings=80, days_ago=100),
    SeedPlugin("meeting-notes-summary", "Turns long meeting notes into a short summary with the"
               " decisions and action items per person.", "text", ("reports",),
               installs=150, rating=3.9, ratings=9, days_ago=10),
    SeedPlugin("medication-reminder", "Builds a daily medication schedule from prescriptions and"
               " reminds when each dose is due.", "scheduling", ("health", "reminders"),
               installs=60, rating=4.9, ratings=4, days_ago=200),
    SeedPlugin("expense-totals", "Adds up expenses by category and month from a list of receipts"
               " and shows how much of the budget is left.", "finance", ("money", "reports"),
               installs=700, rating=4.0, ratings=25, days_ago=1),
    SeedPlugin("class-timetable", "Creates a school timetable from teachers, rooms and subjects"
               " without clashes.", "scheduling", ("school", "calendar"), installs=80,
               rating=3.5, ratings=6, days_ago=300),
    SeedPlugin("email-drafter", "Drafts polite replies to customer emails in the shop's tone of"
               " voice.", "communication", ("email", "text"), installs=1200, rating=4.3,
               ratings=40, days_ago=20),
    SeedPlugin("inventory-tracker", "Tracks stock levels in a warehouse and warns when an item"
               " falls below its reorder point.", "data", ("shop", "reports"), installs=400,
               rating=4.2, ratings=15, days_ago=50),
    SeedPlugin("route-optimizer", "Orders delivery stops into the shortest driving route for a"
               " van.", "productivity", ("time",), installs=90, rating=3.2, ratings=3,
               days_ago=5),
    SeedPlugin("recipe-scaler", "Scales the ingredient quantities of a recipe up or down for a"
               " different number of servings.", "other", ("text",), installs=30),
    SeedPlugin("timesheet-validator", "Validates employee timesheets: missing breaks, overtime"
               " and overlapping entries.", "data", ("staff", "time"), installs=220, rating=3.8,
               ratings=7, days_ago=70),
    SeedPlugin("report-merger", "Merges several text reports into one document with a table of"
               " contents.", "text", ("reports",), installs=45, days_ago=400),
    SeedPlugin("holiday-calendar", "Lists the public holidays of a country and year as calendar"
               " events.", "scheduling", ("calendar",), installs=510, rating=4.4, ratings=11),
    SeedPlugin("currency-converter", "Converts amounts between currencies using a rate table you"
               " provide.", "finance", ("money",), installs=330, rating=4.0, ratings=5,
               days_ago=90),
    SeedPlugin("survey-analyzer", "Summarises survey answers: counts per option and the most"
               " common themes in the free-text answers.", "data", ("reports",), installs=70),
    SeedPlugin("password-meter", "Rates how strong a password is and explains how to improve"
               " it.", "developer", (), installs=10),
    SeedPlugin("unit-converter", "Converts units of length, weight and temperature.", "other",
               (), installs=640, rating=4.5, ratings=22),
    SeedPlugin("birthday-reminder", "Keeps a list of birthdays and reminds you a week before"
               " each one.", "productivity", ("reminders",), installs=75, rating=4.7, ratings=8),
    SeedPlugin("ticket-triage", "Sorts support tickets by urgency and topic and suggests who"
               " should handle each one.", "communication", ("email",), installs=260),
]

# Ten requests in a requester's own words, and the plugin that answers each.
RELEVANCE = [
    ("who works which shift next week", "shift-planner"),
    ("wrong totals on supplier bills", "invoice-checker"),
    ("fix a messy spreadsheet export", "csv-cleaner"),
    ("summarise what was decided in a meeting", "meeting-notes-summary"),
    ("remind grandma to take her pills", "medication-reminder"),
    ("how much did I spend this month", "expense-totals"),
    ("school timetable for teachers", "class-timetable"),
    ("answer customer emails", "email-drafter"),
    ("warn me when stock runs low", "inventory-tracker"),
    ("shortest route for my deliveries", "route-optimizer"),
]


@pytest.fixture
def catalogue(market: dict) -> list[Plugin]:
    return catalogue_seed(team=market["other"], entries=CATALOGUE)


def names(viewer: Any, **params: Any) -> list[str]:
    page = catalogue_search(viewer=viewer, params=SearchParams(**params))
    return [plugin.name for plugin in page.results]


def test_the_expected_plugin_is_in_the_top_three_for_each_query(market: dict,
                                                                catalogue: list) -> None:
    viewer = viewer_for(market["loner"])
    misses = []
    for query, expected in RELEVANCE:
        top = names(viewer, q=query)[:3]
        if expected not in top:
            misses.append((query, expected, top))
    assert misses == []


def test_exact_names_and_partial_words_find_the_plugin_first(market: dict,
                                                             catalogue: list) -> None:
    viewer = viewer_for(market["loner"])
    assert names(viewer, q="csv-cleaner")[0] == "csv-cleaner"
    assert names(viewer, q="timesh")[0] == "timesheet-validator"  # typing, prefix match


def test_filters_and_sorts(market: dict, catalogue: list) -> None:
    viewer = viewer_for(market["loner"])
    finance = names(viewer, category="finance", sort="installs")
    assert finance == ["expense-totals", "currency-converter", "invoice-checker"]
    assert names(viewer, tag="calendar", sort="rating") == ["shift-planner", "holiday-calendar",
                                                            "class-timetable"]
    assert names(viewer, category="finance", sort="updated") == [
        "expense-totals", "invoice-checker", "currency-converter"]
    assert names(viewer, q="money", category="finance", sort="rating") == [
        "invoice-checker", "expense-totals", "currency-converter"]
    assert names(viewer, q="remind", tag="health") == ["medication-reminder"]


def test_pagination(market: dict, catalogue: list) -> None:
    viewer = viewer_for(market["loner"])
    first = catalogue_search(viewer=viewer, params=SearchParams(sort="installs"), per_page=8)
    third = catalogue_search(viewer=viewer, params=SearchParams(sort="installs", page=3),
                             per_page=8)
    assert (first.total, first.pages, len(first.results), len(third.results)) == (20, 3, 8, 4)
    assert first.results[0].name == "csv-cleaner" and not first.has_previous and first.has_next
    beyond = catalogue_search(viewer=viewer, params=SearchParams(sort="installs", page=99),
                              per_page=8)
    assert beyond.page == 3


def test_unknown_parameters_fall_back_to_defaults() -> None:
    params = clean_params(q="  plan   shifts ", category="nonsense", sort="random", page="x")
    assert params == SearchParams(q="plan shifts", category="", tag="", sort="relevance", page=1)


def test_the_catalogue_page_searches_and_answers_htmx_with_the_results_only(
        market: dict, catalogue: list) -> None:
    client = client_for(market["loner"])
    url = reverse("marketplace:catalogue")
    full = client.get(url, {"q": "answer customer emails"}).content.decode()
    assert "<html" in full and "email-drafter" in full
    calendar = full.split("tag=calendar", 1)[1].split("</li>", 1)[0]
    assert '<span class="muted small">3</span>' in calendar  # the tag facet counts its plugins
    partial = client.get(url, {"q": "answer customer emails"}, HTTP_HX_REQUEST="true")
    html = partial.content.decode()
    assert "<html" not in html and 'id="results"' in html and "email-drafter" in html
    empty = client.get(url, {"q": "zzzz qqqq"}).content.decode()
    assert "Nothing matches" in empty


def test_a_fruitless_search_offers_to_request_it_prefilled(market: dict, catalogue: list) -> None:
    client = client_for(market["requester"])
    empty = client.get(reverse("marketplace:catalogue"), {"q": "zzzz qqqq"}).content.decode()
    assert "Request “zzzz qqqq” as a new plugin" in empty
    start = client.get(reverse("interview_new_current"), {"request": "zzzz qqqq"})
    assert start.status_code == 302 and "request=zzzz+qqqq" in start["Location"]
    wizard = client.get(start["Location"]).content.decode()
    assert ">zzzz qqqq</textarea>" in wizard


def test_the_compiled_rankings_rank_exactly_as_the_orm_built_ones(market: dict,
                                                                  catalogue: list) -> None:
    # Each search sends only its words and its embedding to a query compiled once per viewer
    # and filters (autocoder/compiled_queries.py, fetch_rows_bound): same ids, same order.
    from autocoder import compiled_queries
    from marketplace.selectors.catalogue import _filtered, hybrid_ranking

    compiled_queries.forget_all()
    viewer = viewer_for(market["loner"])
    for category, tag in (("", ""), ("scheduling", ""), ("", "money")):
        params = clean_params(q="x", category=category, tag=tag)
        key = ("test", viewer.member_of, viewer.reviewer_of, category, tag)
        for query in ("staff shifts", "invoice", "csv", "meeting notes summary", "timet",
                      "zzzz qqqq", "!!!"):
            assert (hybrid_ranking(lambda p=params: _filtered(viewer, p), query, key=key)
                    == hybrid_ranking(lambda p=params: _filtered(viewer, p), query)), query
    assert hybrid_ranking(lambda: _filtered(viewer, clean_params()), "staff shifts",
                          key=("test-all", viewer.member_of, viewer.reviewer_of, "", ""))


def test_a_page_of_results_carries_what_its_cards_show(market: dict, catalogue: list) -> None:
    # The result cards' plugins come from one compiled query (card_plugins): the same fields,
    # team and version as the ORM's select_related, read without a further query.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from marketplace.selectors.catalogue import _cards, card_plugins

    ids = [plugin.id for plugin in catalogue][:7]
    with CaptureQueriesContext(connection) as queries:
        fast = {p.id: p for p in card_plugins(ids)}
        shown = [(p.name, p.summary, p.get_category_display(), p.tags, p.team.name,
                  p.latest_version.version, p.install_count, p.rating_avg) for p in fast.values()]
    assert len(queries) == 1 and len(shown) == 7
    for plugin in _cards(Plugin.objects.filter(id__in=ids)):
        same = fast[plugin.id]
        assert (same.name, same.summary, same.category, same.tags, same.team.name,
                same.team.slug, same.latest_version.version, same.updated_at) == (
            plugin.name, plugin.summary, plugin.category, plugin.tags, plugin.team.name,
            plugin.team.slug, plugin.latest_version.version, plugin.updated_at)
    assert card_plugins([]) == []


def test_what_the_commands_do_is_searched_too(market: dict, catalogue: list) -> None:
    """Issue 48: "monthly expenses" found only a scheduler, because the plugin that adds up
    the month's spending said so in its command, not in its name or summary."""
    summary = "Reads the sports club's bank export."
    commands = [{"name": "spending-by-category", "examples": [],
                 "description": "Totals the monthly expenses of each category from the bank's "
                                "export."}]
    plugin = Plugin.objects.create(name="club-spending", normalized_name="club-spending",
                                   team=market["other"], visibility="public",
                                   published_at=timezone.now())
    PluginVersion.objects.create(
        plugin=plugin, version="1.0.0", status=PluginVersion.Status.PUBLISHED, source="upload",
        visibility="public", summary=summary, manifest={}, commands=commands, files={},
        readme="# club-spending\n", published_at=timezone.now(),
        summary_embedding=summary_embedding_of("club-spending", summary, commands))
    plugin_listing_refresh(plugin=plugin)
    top = names(viewer_for(market["loner"]), q="monthly expenses")[:3]
    assert "club-spending" in top, top
