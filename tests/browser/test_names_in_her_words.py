"""Requesters see their tool in their words (issue 48), in Chromium at 1280 and 390 px, axe
finding nothing serious and nothing scrolling sideways: a bookkeeper's request that starts with
who she is gets short names for what the tool does (the plugin, its task) and a description in
the third person; she changes them on the summary page, and what she saved is what starts.

The analyst is the scripted provider (tests/browser/conftest.py); the wizard is the real one.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from projects.models import Interview
from tests.browser.checks import accessible_and_fits
from tests.browser.journey import WIDTHS
from tests.browser.pages import continue_, fill_example, log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BOOKKEEPER = ("I'm the volunteer bookkeeper of our sports club. I get a CSV export from our "
              "bank every month and need to add up how much was spent at REWE, EDEKA or ALDI.")


def up_to_the_summary(page: Page) -> None:
    page.get_by_role("link", name="New request").first.click()
    page.get_by_label("What do you need?").fill(BOOKKEEPER)
    page.get_by_role("button", name="Continue").click()
    page.get_by_label("What tasks should it do for you?").fill(
        "add up how much was spent per category")
    continue_(page)
    # The task is named for what it does, not for the first words typed.
    task = "\u201cspending-by-category\u201d"
    page.get_by_label(f"What will you give it for {task}?").fill("the bank's rows")
    page.get_by_label(f"What should you get back from {task}?").fill("a total per category")
    continue_(page)
    fill_example(page, 1, "category: food\namount: 12.50", "food: 12.50")
    fill_example(page, 2, "category: drinks\namount: 3", "drinks: 3")
    continue_(page)
    expect(page.get_by_label("Semi-automatic")).to_be_visible()
    continue_(page)
    page.get_by_label("Should the greeting be formal or casual?").fill("There is none.")
    continue_(page)
    expect(page.get_by_role("heading", name="Check your request")).to_be_visible()


def test_the_names_and_description_are_proposed_for_what_it_does_and_hers_to_change(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    page = context_factory(bypass_csp=True).new_page()
    log_in(page, server, "rita")
    up_to_the_summary(page)
    names = page.get_by_role("group", name="Its names and what it does")
    expect(names.get_by_label("Short name")).to_have_value("monthly-spending")
    task = names.get_by_label("Name of the task \u201cadd up how much was spent per category\u201d")
    expect(task).to_have_value("spending-by-category")
    description = names.get_by_label("What it does")
    expect(description).to_have_value("Adds up how much was spent at REWE, EDEKA or ALDI.")
    summary_url = page.url

    for width, height in WIDTHS:
        if width != WIDTHS[0][0]:
            page = context_factory(viewport={"width": width, "height": height},
                                   bypass_csp=True).new_page()
            log_in(page, server, "rita")
            page.goto(summary_url)
        accessible_and_fits(page, "the summary with its names", width)

    # She names them her way; a bad task name is refused next to it, nothing typed is lost.
    names = page.get_by_role("group", name="Its names and what it does")
    names.get_by_label("Short name").fill("club-spending")
    task = names.get_by_label(
        "Name of the task \u201cadd up how much was spent per category\u201d")
    task.fill("per shop!")
    names.get_by_label("What it does").fill(
        "Adds up what the club spent at each supermarket in a month.")
    page.get_by_role("button", name="Save the names").click()
    expect(page.locator("#cmd-c1-name-error")).to_contain_text("Give this task a short name")
    expect(names.get_by_label("What it does")).to_have_value(
        "Adds up what the club spent at each supermarket in a month.")
    accessible_and_fits(page, "the summary with a refused task name", WIDTHS[1][0])
    task.fill("spending-per-shop")
    page.get_by_role("button", name="Save the names").click()
    expect(page.locator(".saved")).to_have_text("Saved: the name is now \u201cclub-spending\u201d.")
    state = Interview.objects.get(requester=people["requester"]).state
    assert state["name"] == "club-spending"
    assert [c["name"] for c in state["commands"]] == ["spending-per-shop"]
    assert state["summary"] == "Adds up what the club spent at each supermarket in a month."
    expect(page.get_by_role("heading", name="spending-per-shop")).to_be_visible()  # its task
