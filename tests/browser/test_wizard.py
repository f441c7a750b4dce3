"""The requester's interview in a real browser (Chromium via Playwright) against a live server.

Nothing is mocked: daphne serves the portal on the test database, the analyst and the run use
the scripted provider (a recorded script, docs/llm.md, "The scripted provider"), and a real
Dramatiq worker in this
process executes the run that "Start" queues (sandbox: bubblewrap).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from projects.interview import spec_assembly
from projects.models import Interview
from runs.models import Project, Run
from tests.browser.pages import (
    REQUEST,
    answer_actions,
    continue_,
    describe,
    fill_example,
    greet_up_to_examples,
    log_in,
    log_out,
    same_document,
    wait_for,
)
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

def test_requester_journey_through_the_wizard_ends_with_a_running_project(
        server: LiveServer, worker: Any, people: dict, context_factory: Any,
        screenshots: Path) -> None:
    page = context_factory().new_page()
    log_in(page, server, "rita")
    page.get_by_role("link", name="New request").first.click()
    expect(page.get_by_role("heading", name="What do you need?")).to_be_visible()
    page.get_by_label("What do you need?").fill(REQUEST)
    page.screenshot(path=str(screenshots / "wizard-step1.png"), full_page=True)
    page.get_by_role("button", name="Continue").click()

    # The project shows on the board from step 1 on. The analyst asks, so there are 5 pages,
    # and the counter says so from the first page to the last.
    expect(page.get_by_text("What tasks should it do for you?")).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "What it should do (page 1 of 5)")
    project = Project.objects.get(requester=people["requester"])
    assert project.status == Project.Status.INTERVIEWING

    answer_actions(page)
    expect(page.get_by_role("heading", level=1)).to_contain_text("(page 2 of 5)")
    page.get_by_label("What will you give it for \u201cgreet\u201d?").fill("name")
    page.get_by_role("button", name=re.compile("^Skip this question")).nth(1).click()
    expect(page.get_by_text("We will assume: \u201cgreet\u201d gives back exactly what its "
                            "examples show.")).to_be_visible()
    continue_(page)

    expect(page.get_by_text("Show two or more real examples for \u201cgreet\u201d.")
           ).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_contain_text("(page 3 of 5)")
    fill_example(page, 1, "name: Ada", "message: Hello, Ada!")
    fill_example(page, 2, "name: Linus", "message: Hello, Linus!")
    page.get_by_label("What should \u201cgreet\u201d do when something is missing or looks "
                      "wrong?").fill("Refuse an empty name with a clear message.")
    page.screenshot(path=str(screenshots / "wizard-questions.png"), full_page=True)
    continue_(page)

    expect(page.get_by_text("How often should a person check the work while it is built?")
           ).to_be_visible()
    expect(page.get_by_role("heading", level=1)).to_contain_text("(page 4 of 5)")
    page.get_by_label("Semi-automatic").check()
    continue_(page)

    # The analyst's questions come after the checklist; go back once and return.
    formal = page.get_by_label("Should the greeting be formal or casual?")
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "A few more questions (page 5 of 5)")
    formal.fill("Casual and friendly.")
    page.get_by_role("button", name="Back").click()
    expect(page.get_by_label("Semi-automatic")).to_be_checked()
    continue_(page)
    expect(formal).to_have_value("Casual and friendly.")
    continue_(page)

    expect(page.get_by_role("heading", name="Check your request")).to_be_visible()
    assumptions = page.locator(".assumptions")
    expect(assumptions.get_by_text("gives back exactly what its examples show")).to_be_visible()
    expect(assumptions.get_by_text("One person per request.")).to_be_visible()  # blank, nice
    page.screenshot(path=str(screenshots / "wizard-summary.png"), full_page=True)

    # The automatic name is changed right on the summary; a bad one is refused next to it.
    name = page.get_by_label("Short name")
    expect(name).to_have_value("person-greeter")
    name.fill("my greeter!")
    page.get_by_role("button", name="Save the name").click()
    expect(page.locator("#name-error")).to_contain_text(
        "\u201cmy greeter!\u201d cannot be used as a name: use only letters, digits")
    expect(page.get_by_label("Short name")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Short name").fill("greeter")
    page.get_by_role("button", name="Save the name").click()
    expect(page.locator(".saved")).to_have_text("Saved: the name is now \u201cgreeter\u201d.")
    expect(page).to_have_title("Check your request (step 3 of 3) \u00b7 greeter \u00b7 Autocoder")
    assert Project.objects.get(pk=project.pk).name == "greeter"

    page.get_by_role("button", name="Start").click()
    expect(page.get_by_text("Started.", exact=False)).to_be_visible()
    project.refresh_from_db()
    assert project.spec["name"] == "greeter" and project.spec["autonomy"] == "semi"
    assert Interview.objects.get(project=project).step == Interview.Step.STARTED
    run = Run.objects.get(project=project)
    # The worker takes the queued run; in semi-automatic mode it stops for the plan approval.
    wait_for(lambda: Project.objects.get(pk=project.pk).status != Project.Status.QUEUED,
             what="the worker to take the run")
    wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.AWAITING_APPROVAL,
             what="the plan approval")
    assert Project.objects.get(pk=project.pk).status == Project.Status.AWAITING_APPROVAL


def test_a_half_finished_interview_resumes_after_logging_out_and_in(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    page = context_factory().new_page()
    log_in(page, server, "rita")
    describe(page)
    answer_actions(page)
    page.get_by_label("What will you give it for \u201cgreet\u201d?").fill("name")
    log_out(page)  # the typed, unsaved answer is gone; the saved ones are not

    log_in(page, server, "rita")
    expect(page.get_by_role("heading", name="Continue where you left off")).to_be_visible()
    page.get_by_role("link", name="person-greeter").click()
    expect(page.get_by_text("What will you give it for \u201cgreet\u201d?")).to_be_visible()
    expect(page.get_by_label("What will you give it for \u201cgreet\u201d?")).to_have_value("")
    page.get_by_role("button", name="Back").click()
    expect(page.get_by_label("What tasks should it do for you?")).to_have_value(
        "greet: say hello to someone by name")


def test_validation_errors_are_in_plain_words_next_to_the_field(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    page = context_factory().new_page()
    log_in(page, server, "rita")
    greet_up_to_examples(page)

    fill_example(page, 1, "name: Ada", "message: Hello, Ada!")
    fill_example(page, 2, "name: Linus\njust words", "")
    continue_(page)
    no_result = page.get_by_role("group", name="Example 2", exact=True).get_by_label(
        "What should come back")
    expect(no_result).to_have_attribute("aria-invalid", "true")
    error = page.locator("#ex-c1-1-out-error")
    expect(error).to_have_text(re.compile(
        "Example 2 has no result: say what should come back for this input."))
    expect(no_result).to_have_attribute("aria-describedby", re.compile("ex-c1-1-out-error"))
    expect(page.locator("#ex-c1-1-in-error")).to_have_text(re.compile(
        "Line 2 \\(\u201cjust words\u201d\\) needs a name, a colon and a value"))
    # The error summary is announced and focused, and its links lead to the fields.
    expect(page.get_by_role("alert")).to_be_focused()
    page.get_by_role("link", name=re.compile("Example 2 has no result")).click()
    expect(page).to_have_url(re.compile("#ex-c1-1-out$"))
    # Nothing typed was lost.
    expect(page.get_by_role("group", name="Example 2", exact=True).get_by_label(
        "What goes in")).to_have_value("name: Linus\njust words")


def test_step_one_can_be_completed_with_the_keyboard_alone(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    page = context_factory().new_page()
    log_in(page, server, "rita")
    page.goto(f"{server.url}t/acme/new/")
    textarea = page.get_by_label("What do you need?")
    for _ in range(20):
        page.keyboard.press("Tab")
        if textarea.evaluate("el => el === document.activeElement"):
            break
    expect(textarea).to_be_focused()
    page.keyboard.type(REQUEST)
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Continue")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_text("What tasks should it do for you?")).to_be_visible()
    assert Interview.objects.get(requester=people["requester"]).request == REQUEST


def test_the_basic_path_works_without_javascript(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    page = context_factory(java_script_enabled=False).new_page()
    log_in(page, server, "rita")
    describe(page)
    page.get_by_role("button", name=re.compile("^Skip this question")).first.click()
    expect(page.get_by_text("We will assume: It does one task, called \u201crun\u201d"
                            )).to_be_visible()
    continue_(page)
    expect(page.get_by_text("What will you give it for \u201crun\u201d?")).to_be_visible()
    assert "/questions/?group=1" in page.url


def test_the_tab_title_follows_every_step_swapped_in_by_htmx(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    page = context_factory().new_page()
    log_in(page, server, "rita")
    page.get_by_role("link", name="New request").first.click()
    expect(page).to_have_title("What do you need? (step 1 of 3) \u00b7 Autocoder")
    page.evaluate("window.__sameDocument = true")  # gone if a step reloads the page

    page.get_by_label("What do you need?").fill(REQUEST)
    page.get_by_role("button", name="Continue").click()
    expect(page).to_have_title(
        "What it should do, page 1 of 5 \u00b7 person-greeter \u00b7 Autocoder")
    answer_actions(page)
    expect(page).to_have_title("What goes in and what comes out, page 2 of 5 \u00b7 "
                               "person-greeter \u00b7 Autocoder")
    page.get_by_role("button", name="Back").click()
    expect(page).to_have_title(
        "What it should do, page 1 of 5 \u00b7 person-greeter \u00b7 Autocoder")
    page.get_by_role("button", name="Back").click()
    expect(page).to_have_title("What do you need? (step 1 of 3) \u00b7 Autocoder")
    assert same_document(page)  # every step came as an htmx swap, and the title followed


MEETINGS_CSV = "day,start,title\nMon,09:00,Stand-up\nTue,10:30,Planning\nWed,14:00,Retro"


def to_examples(page: Page) -> None:
    page.get_by_label("What tasks should it do for you?").fill(
        "count: count my meetings of the week")
    continue_(page)
    page.get_by_label("What will you give it for \u201ccount\u201d?").fill("meetings")
    page.get_by_label("What should you get back from \u201ccount\u201d?").fill("how many")
    continue_(page)
    expect(page.get_by_text("Show two or more real examples for \u201ccount\u201d.")
           ).to_be_visible()


def test_a_pasted_csv_and_an_attached_sample_file_become_examples_shown_readably(
        server: LiveServer, people: dict, context_factory: Any, tmp_path: Path,
        screenshots: Path) -> None:
    sample = tmp_path / "next week.csv"
    sample.write_text("day,start,title\nThu,11:00,Demo\nFri,09:00,Review\nFri,15:00,1:1\n")
    page = context_factory().new_page()
    log_in(page, server, "rita")
    describe(page, "Count the meetings in a list of meetings, please.")
    to_examples(page)
    fill_example(page, 1, MEETINGS_CSV, "3")
    second = page.get_by_role("group", name="Example 2", exact=True)
    second.get_by_label("What should come back").fill("4")
    second.get_by_label(re.compile("^Attach a sample file")).set_input_files(str(sample))
    page.get_by_label("What should \u201ccount\u201d do when something is missing or looks "
                      "wrong?").fill("Say 0 for an empty list.")
    continue_(page)

    expect(page.get_by_text("How often should a person check the work")).to_be_visible()
    page.get_by_role("button", name="Back").click()
    expect(page.get_by_role("group", name="Example 2", exact=True).get_by_label(
        "What goes in")).to_have_value("next_week:\n  day,start,title\n"
                                       "  Thu,11:00,Demo\n  Fri,09:00,Review\n  Fri,15:00,1:1")
    continue_(page)
    expect(page.get_by_role("heading", level=1)).to_contain_text("(page 4 of 5)")
    continue_(page)
    page.get_by_label("Should the greeting be formal or casual?").fill("Not relevant.")
    continue_(page)

    expect(page.get_by_role("heading", name="Check your request")).to_be_visible()
    tables = page.locator(".example-table .sample-table")
    expect(tables).to_have_count(2)
    expect(tables.nth(0).get_by_role("columnheader")).to_have_text(["day", "start", "title"])
    expect(tables.nth(0).get_by_role("row").nth(2)).to_have_text(
        re.compile("Tue\\s*10:30\\s*Planning"))
    expect(tables.nth(1).get_by_role("row")).to_have_count(4)
    page.screenshot(path=str(screenshots / "wizard-summary-data.png"), full_page=True)
    interview = Interview.objects.get(requester=people["requester"])
    spec = spec_assembly.assemble(interview.request, interview.state, interview.questions).spec
    # The pasted table and the attached file are one input under one name.
    inputs = [e["input"] for e in spec["commands"][0]["examples"]]
    assert len({frozenset(value) for value in inputs}) == 1, inputs
    assert [next(iter(value.values())) for value in inputs] == [
        MEETINGS_CSV, "day,start,title\nThu,11:00,Demo\nFri,09:00,Review\nFri,15:00,1:1"]


def test_a_sample_file_is_attached_without_javascript_and_a_big_one_is_refused(
        server: LiveServer, people: dict, context_factory: Any, tmp_path: Path) -> None:
    big = tmp_path / "year.csv"
    big.write_text("day,start,title\n" + "Mon,09:00,Stand-up\n" * 2000)  # about 40 KB
    small = tmp_path / "meetings.csv"
    small.write_text(MEETINGS_CSV)
    page = context_factory(java_script_enabled=False).new_page()
    log_in(page, server, "rita")
    describe(page, "Count the meetings in a list of meetings, please.")
    to_examples(page)
    fill_example(page, 1, "week: 19", "3")
    fill_example(page, 2, "week: 20", "0")
    first = page.get_by_role("group", name="Example 1", exact=True)
    first.get_by_label(re.compile("^Attach a sample file")).set_input_files(str(big))
    continue_(page)
    expect(page.locator("#ex-c1-0-file-error")).to_contain_text(
        f"\u201cyear.csv\u201d is {big.stat().st_size // 1024} KB; a sample file can be at "
        "most 16 KB.")
    expect(page.get_by_role("group", name="Example 2", exact=True).get_by_label(
        "What goes in")).to_have_value("week: 20")  # the other answers are kept

    first = page.get_by_role("group", name="Example 1", exact=True)
    first.get_by_label(re.compile("^Attach a sample file")).set_input_files(str(small))
    continue_(page)
    expect(page.get_by_text("How often should a person check the work")).to_be_visible()
    command = Interview.objects.get(requester=people["requester"]).state["commands"][0]
    assert command["examples"][0]["input"] == (
        "week: 19\nmeetings:\n  " + MEETINGS_CSV.replace("\n", "\n  "))
