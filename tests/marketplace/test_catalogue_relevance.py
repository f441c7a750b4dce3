"""Catalogue relevance for a multi-word query (issue 28, item 9): "monthly expenses" found only
weekly-scheduler, not the plugins about expenses and monthly reports.

A plugin that has the query's words in its name, summary, tags or README (where a command's
description is written) is a match; one whose summary merely sounds a little like the query
(MiniLM similarity just above the floor: weekly-scheduler's "week of meetings" is 0.30 from
"monthly expenses") is not, while anything has the words. The catalogue is seeded straight
into the tables with the vectors a publication computes (config.benchmarks.marketplace)."""

from __future__ import annotations

from typing import Any

import pytest

from config.benchmarks.marketplace import SeedPlugin, catalogue_seed
from marketplace.selectors.catalogue import SearchParams, catalogue_search
from marketplace.selectors.visibility import viewer_for

pytestmark = pytest.mark.django_db

# weekly-scheduler first, as on the probe's installation: the older plugin wins a tie.
CATALOGUE = [
    SeedPlugin("weekly-scheduler", "Plans a week of meetings from a list of days.",
               "scheduling", ("calendar",), installs=40),
    SeedPlugin("week47-report", "Totals a CSV of receipts by category.", "finance",
               ("expenses", "monthly"), installs=3),
    SeedPlugin("csv-totals", "Adds up the amounts of a CSV file per category.", "data", (),
               readme="# csv-totals\n\nCommands:\n\n- monthly-totals: adds up a month of "
                      "expenses per category.\n", installs=2),
    SeedPlugin("email-drafter", "Drafts polite replies to customer emails.", "communication",
               ("email",), installs=90),
]


def names(viewer: Any, q: str) -> list[str]:
    return [p.name for p in catalogue_search(viewer=viewer, params=SearchParams(q=q)).results]


def test_monthly_expenses_finds_the_expense_plugins_not_the_scheduler(market: dict) -> None:
    catalogue_seed(team=market["other"], entries=CATALOGUE)
    viewer = viewer_for(market["loner"])
    found = names(viewer, "monthly expenses")
    # Both words: the tagged plugin (summary and tags weigh more than a README) first.
    assert found == ["week47-report", "csv-totals"], found
    assert names(viewer, "expenses")[:2] == ["week47-report", "csv-totals"]
    # Any one meaningful word is enough; words nobody uses add nothing.
    assert names(viewer, "the monthly zzyzx") == ["week47-report", "csv-totals"]


def test_a_query_without_any_matching_word_still_finds_what_sounds_alike(market: dict) -> None:
    """The semantic half stays for words the catalogue does not use (a requester's own words)."""
    catalogue_seed(team=market["other"], entries=CATALOGUE)
    viewer = viewer_for(market["loner"])
    assert names(viewer, "reply to my customers")[0] == "email-drafter"
