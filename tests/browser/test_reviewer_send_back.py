"""The reviewer model's send-back in Chromium (docs/engine.md, "The reviewer model"): a change
request whose reviewing model asks for changes shows its verdict, its reasons and the button
"Send back with the reviewer's reasons"; one click on a phone sends the work back, and the run
page tells the exchange. Both pages pass axe-core and fit 1280 px and 390 px.

Nothing is mocked: daphne on the test database, Redis for the queue; the run's history is
written as the engine leaves it (the engine's side is tests/engine/test_reviewer_sends_back.py).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import expect

from runs.models import ApprovalRequest, Iteration, LoopEvent, Project, Run
from tests.browser.checks import accessible_and_fits as check
from tests.browser.journey import WIDTHS
from tests.browser.pages import log_in
from tests.live import LiveServer
from tests.projects.portal_factories import approval_for, run_with_history

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

REMARKS = ("1. weekly_scheduler/plugin.py: a week that starts on Sunday is scheduled from "
           "Monday; read the first day from the request instead of assuming it.\n"
           "2. tests/test_generated_days.py: the test of an empty task list cannot fail; "
           "assert the empty schedule it should return.")


def _waiting_change(people: dict[str, Any]) -> ApprovalRequest:
    project = Project.objects.create(team=people["team"], requester=people["requester"],
                                     name="weekly-scheduler",
                                     status=Project.Status.AWAITING_APPROVAL, spec={})
    run = run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL,
                           phase=Run.Phase.LEARN, autonomy="semi")
    return approval_for(run, reasons=["the reviewing model asks for changes: you may send the "
                                      "work back with its reasons"],
                        second_opinion={"verdict": "request_changes", "remarks": REMARKS,
                                        "iteration": 2})


def waiting_change(people: dict[str, Any]) -> ApprovalRequest:
    # Written in a thread of its own: the services announce changes through channels'
    # async_to_sync, which refuses to run where Playwright's loop runs (see conftest.py).
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_waiting_change, people).result()


def test_one_click_sends_the_work_back_with_the_reviewers_reasons(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    change = waiting_change(people)
    pages = {}
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()  # axe is injected as a script
        log_in(page, server, "rob")
        page.goto(f"{server.url}approvals/{change.pk}/")
        opinion = page.get_by_role("region", name="Second opinion (the reviewing model)")
        expect(opinion.get_by_text("Would ask for changes")).to_be_visible()
        expect(opinion.get_by_text("read the first day from the request")).to_be_visible()
        expect(opinion.get_by_role("button", name="Send back with the reviewer's reasons")
               ).to_be_visible()
        check(page, "change request", width)
        pages[width] = page

    phone = pages[390]
    phone.get_by_role("button", name="Send back with the reviewer's reasons").click()
    expect(phone.get_by_text("Decision saved: changes requested.")).to_be_visible()
    expect(phone.get_by_role("button", name="Send back with the reviewer's reasons")
           ).to_have_count(0)

    change.refresh_from_db()
    assert change.status == ApprovalRequest.Status.CHANGES_REQUESTED
    assert change.comment.split() == REMARKS.split()
    findings = Iteration.objects.get(run=change.run, number=2).failures
    assert any("read the first day from the request" in text for text in findings)
    assert LoopEvent.objects.filter(run=change.run, type="reviewer",
                                    action="sent_back_by_person").count() == 1

    for width, page in pages.items():
        page.goto(f"{server.url}runs/{change.run_id}/")
        told = ("A person sent the work back to the model with the reviewing model's "
                "reasons.")
        expect(page.locator("#run-summary").get_by_text(told)).to_be_visible()
        step = page.locator(".timeline li", has_text=told)
        step.get_by_text("What the reviewing model said").click()
        expect(page.get_by_text("assert the empty schedule it should return")).to_be_visible()
        check(page, "run page", width)
