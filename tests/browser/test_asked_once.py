"""The wizard asks once (issue 48), in Chromium at 1280 and 390 px, axe finding nothing serious
and nothing scrolling sideways: the bookkeeper describes her task and page 1 shows it written
down from her words, for her to check, instead of asking her to type it again; the analyst
(the scripted provider, standing in for a hosted model) asks, right after her request, for the
CSV's columns and whether incoming money counts, which her examples and her answer about
unusual input settle by the time she reaches its page: they come filled in with her words, and
only its new question is open.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from projects.models import Interview
from tests.browser.checks import accessible_and_fits
from tests.browser.conftest import ENGINE_SCRIPTS
from tests.browser.journey import WIDTHS
from tests.browser.pages import continue_, describe, fill_example, log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BOOKKEEPER = ("I'm the volunteer bookkeeper of our sports club. Every month I export the bank "
              "statement as CSV and need to add up how much was spent per category.")
TASK = "spending-by-category: Adds up how much was spent per category."
COLUMNS = "Which columns does the bank's CSV file have?"
INCOMING = "Should incoming money (positive amounts) be counted?"
CURRENCY = "Which currency are the amounts in?"
EDGE = "Leave out incoming money (positive amounts): only spending counts."


@pytest.fixture
def script_file(tmp_path: Path) -> Path:
    """The engine's success script, with an analyst that asks what the form will settle."""
    script = json.loads((ENGINE_SCRIPTS / "success.json").read_text())
    script["analyst"] = [json.dumps([
        {"question": COLUMNS, "priority": "important", "assumption": "date, payee, amount"},
        {"question": INCOMING, "priority": "important", "assumption": "No."},
        {"question": CURRENCY, "priority": "nice", "assumption": "Euros."}])]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return path


def test_the_wizard_does_not_ask_again_what_she_wrote(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rita")
        describe(page, BOOKKEEPER)
        tasks = page.get_by_label("What tasks should it do for you?")
        expect(tasks).to_have_value(TASK)  # her task, from her words, to check
        expect(tasks).to_have_accessible_description(
            "We wrote down the task from what you described: check it, change its name or "
            "words if they are not right, or add another task on its own line. "
            + page.locator("#commands-hint").inner_text())
        accessible_and_fits(page, "page 1 with the task proposed", width)
        continue_(page)  # right as it is: nothing typed

        task = "\u201cspending-by-category\u201d"
        page.get_by_label(f"What will you give it for {task}?").fill("the bank's CSV export")
        page.get_by_label(f"What should you get back from {task}?").fill("a total per category")
        continue_(page)
        fill_example(page, 1, "rows:\ndate;payee;amount;category\n2026-03-01;REWE;-12,50;food",
                     "food: 12.50")
        fill_example(page, 2, "rows:\ndate;payee;amount;category\n2026-03-02;ALDI;-3;food",
                     "food: 3")
        page.get_by_label(f"What should {task} do when something is missing or looks wrong?"
                          ).fill(EDGE)
        continue_(page)
        expect(page.get_by_label("Semi-automatic")).to_be_visible()
        continue_(page)

        expect(page.get_by_role("heading", level=1)).to_contain_text("A few more questions")
        columns = page.get_by_label(COLUMNS)
        expect(columns).to_have_value(
            "As the examples show: rows: / date;payee;amount;category")
        expect(page.locator(".question", has_text=COLUMNS)).to_contain_text(
            "Answered already by your examples")
        expect(page.get_by_label(INCOMING)).to_have_value(EDGE)
        expect(page.locator(".question", has_text=INCOMING)).to_contain_text(
            "Answered already by what you said it should do when something is missing")
        expect(page.get_by_label(CURRENCY)).to_have_value("")  # new: still hers to answer
        accessible_and_fits(page, "the analyst's page with answers given before", width)
        page.get_by_label(CURRENCY).fill("Euros, with a decimal comma.")
        continue_(page)
        expect(page.get_by_role("heading", name="Check your request")).to_be_visible()

    for interview in Interview.objects.filter(requester=people["requester"]):
        assert [c["name"] for c in interview.state["commands"]] == ["spending-by-category"]
        answers = {q["text"]: q["answer"] for q in interview.questions
                   if q.get("source") == "analyst"}
        assert answers[INCOMING] == EDGE
        assert answers[CURRENCY] == "Euros, with a decimal comma."
