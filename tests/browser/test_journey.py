"""The whole journey in two browsers: a requester's interview, a reviewer's live board and the
approvals, until the run has succeeded and its publish request is approved.

Nothing is mocked: daphne on the test database, Redis channel layer for the live pages, the
scripted provider replaying a recorded script (docs/llm.md, "The scripted provider"), a real
Dramatiq worker in this
process, bubblewrap as the sandbox for the plugin's tests.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from runs.models import ApprovalRequest, Project, Run
from tests.browser.pages import (
    LIVE_UPDATE_MS,
    continue_,
    fill_example,
    greet_up_to_examples,
    log_in,
    same_document,
    wait_for,
    wait_until_live,
)
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# ms: how long the worker may take to bring a run to its next gate (a step includes a sandboxed
# pytest run on a shared 2-core machine); changes saved by a page use LIVE_UPDATE_MS.
RUN_STEP_MS = 60_000


def interview_to_summary(page: Page) -> None:
    greet_up_to_examples(page)
    fill_example(page, 1, "name: Ada", "message: Hello, Ada!")
    fill_example(page, 2, "name: Linus", "message: Hello, Linus!")
    page.get_by_label("What should \u201cgreet\u201d do when something is missing or looks "
                      "wrong?").fill("Refuse an empty name with a clear message.")
    continue_(page)
    page.get_by_label("Semi-automatic").check()
    page.get_by_label("Is there anything it must always or never do?").fill(
        "Standard library only")
    continue_(page)
    page.get_by_label("Should the greeting be formal or casual?").fill("Casual.")
    continue_(page)
    expect(page.get_by_role("heading", name="Check your request")).to_be_visible()


def card(board: Page, column: str, name: str) -> Any:
    return board.locator(f"#col-{column}").get_by_role("heading", name=name)


def approve_from_board(board: Page, kind: str) -> None:
    """Open the card's pending request from the board, look at the diff, approve it."""
    board.locator("#col-awaiting_approval").get_by_role(
        "link", name=re.compile("Needs a human")).click()
    expect(board.get_by_role("heading", name=f"{kind} request: greeter")).to_be_visible()
    if kind == "Publish":
        diff = board.get_by_role("region", name=re.compile("^Code"))
        expect(diff).to_contain_text("greeter/plugin.py")
        expect(diff).to_contain_text("Hello, {name}!")
    # A publish request is approved and published in one step (version, visibility and
    # category chosen in the same form; the defaults are kept here).
    board.get_by_label("Approve and publish" if kind == "Publish" else "Approve",
                       exact=True).check()
    board.get_by_role("button", name="Send decision").click()
    expect(board.locator(".messages")).to_be_visible()


def test_request_to_succeeded_run_across_wizard_board_and_approvals(
        server: LiveServer, worker: Any, people: dict, context_factory: Any) -> None:
    reviewer = context_factory().new_page()
    log_in(reviewer, server, "rob")
    reviewer.goto(f"{server.url}t/acme/board/")
    expect(reviewer.get_by_role("heading", name="Acme board")).to_be_visible()
    wait_until_live(reviewer)

    # Each saved step of the interview shows on the open board (the card appears at step 1).
    requester = context_factory().new_page()
    log_in(requester, server, "rita")
    interview_to_summary(requester)
    expect(card(reviewer, "interviewing", "person-greeter")).to_be_visible(
        timeout=LIVE_UPDATE_MS)

    requester.get_by_label("Short name").fill("greeter")  # right on the summary
    requester.get_by_role("button", name="Save the name").click()
    expect(requester.locator(".saved")).to_contain_text("greeter")  # saved
    expect(card(reviewer, "interviewing", "greeter")).to_be_visible(timeout=LIVE_UPDATE_MS)

    requester.get_by_role("button", name="Start").click()
    expect(requester.get_by_role("heading", name=re.compile("greeter"))).to_be_visible()
    project = Project.objects.get(name="greeter")
    run = Run.objects.get(project=project)
    assert requester.url.endswith(f"/runs/{run.pk}/")
    # The run page is live: what it shows follows the run without a reload (issue 48).
    wait_until_live(requester)

    # Semi-automatic: the plan waits for a reviewer; the board moved the card by itself.
    expect(card(reviewer, "awaiting_approval", "greeter")).to_be_visible(timeout=RUN_STEP_MS)
    assert same_document(reviewer)
    approve_from_board(reviewer, "Plan")

    wait_for(lambda: ApprovalRequest.objects.filter(
        run=run, kind=ApprovalRequest.Kind.PUBLISH, status="pending").exists(),
        timeout_s=240, what="the run to succeed and ask for its publish approval")
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    reviewer.get_by_role("link", name="Acme board").click()
    expect(card(reviewer, "awaiting_approval", "greeter")).to_be_visible()
    approve_from_board(reviewer, "Publish")

    wait_for(lambda: Project.objects.get(pk=project.pk).status == Project.Status.PUBLISHED,
             what="the publish approval to publish the plugin")
    assert Run.objects.get(pk=run.pk).status == Run.Status.SUCCEEDED
    expect(requester.locator("main")).to_contain_text("Succeeded", timeout=RUN_STEP_MS)
    # The attempt it checked replaced "No attempt checked yet", in the same document.
    expect(requester.get_by_role("heading", name="Attempt 1", exact=True)).to_be_visible(
        timeout=LIVE_UPDATE_MS)
    expect(requester.get_by_text("No attempt checked yet")).to_have_count(0)
    assert same_document(requester)
    reviewer.get_by_role("link", name="Acme board").click()
    expect(card(reviewer, "published", "greeter")).to_be_visible()
