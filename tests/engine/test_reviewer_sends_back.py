"""The reviewing model can send work back (docs/engine.md, "The reviewer model"): under full
autonomy a verdict of "changes needed" goes back into the loop as findings, at most twice a
run; under semi autonomy the person at the change request sends it back with one click; a
reply that cannot be read never sends anything back.

The model is the scripted provider (docs/llm.md, "The scripted provider"), the stand-in for a
hosted LLM that cannot be reached here; the sandbox, the services and the pages are the
production code.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import ApprovalRequest, LoopEvent, Run
from runs.selectors import results as selectors
from runs.services import deciding, driving
from teams.models import AuditEntry
from tests.engine.conftest import iterations, load_script, prompts

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

REMARK = "a name with spaces around it is greeted as typed; strip it first."
ASKS = f"VERDICT: request_changes\n1. greeter/plugin.py: {REMARK}"
APPROVES = "VERDICT: approve\nThe name is stripped now."
SENT_BACK = "The reviewing model asked for changes"


def script(*reviewer: str) -> dict[str, list[str]]:
    """The `reviewed` scenario; the implementer's second reply strips the name."""
    base = load_script("reviewed")
    fixed = base["implementer"][0].replace('f"Hello, {name}!"', 'f"Hello, {name.strip()}!"')
    assert fixed != base["implementer"][0]
    return {**base, "implementer": [base["implementer"][0], fixed], "reviewer": list(reviewer)}


def drive(run: Run) -> Run:
    return driving.run_drive(run_id=run.id)


def pending(run: Run) -> ApprovalRequest:
    approval = selectors.pending_approval(run)
    assert approval is not None, f"run {run.id} has no pending approval ({run.status})"
    return approval


def page(user: Any, name: str, pk: int) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse(name, args=[pk]))
    assert response.status_code == 200
    return response.content.decode()


def exchange(run: Run) -> list[tuple[int, str]]:
    return [(e.iteration, e.action) for e in LoopEvent.objects.filter(run=run, type="reviewer")
            .order_by("id")]


def test_full_autonomy_sends_changes_back_and_the_implementer_reads_the_reasons(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    run = drive(start_run(script(ASKS, APPROVES)))

    assert run.status == Run.Status.SUCCEEDED, run.error
    first, second = iterations(run)
    assert first.succeeded and any(f.startswith(SENT_BACK) and REMARK in f
                                   for f in first.failures)
    # The next implementer prompt carries the reviewer's reasons, as it would failing tests.
    assert REMARK in prompts(run, "implementer")[1]
    assert REMARK not in prompts(run, "implementer")[0]
    assert "name.strip()" in second.files["greeter/plugin.py"]
    assert exchange(run) == [(1, "send_back"), (2, "satisfied")]
    # What is published is the code the reviewer saw last, with its opinion.
    publish = pending(run)
    assert publish.iteration == 2 and run.best_iteration_id == second.id
    assert publish.payload["second_opinion"]["verdict"] == "approve"

    shown = html.unescape(page(people["reviewer"], "run_detail", run.pk))
    assert ("The reviewing model asked for changes, so the work went back to the model with "
            "its reasons (round 1 of 2).") in shown
    assert "What the reviewing model said" in shown and REMARK in shown
    assert "The reviewing model is satisfied with the changes." in shown


def test_full_autonomy_sends_back_at_most_twice_then_a_person_decides(
        start_run: Callable[..., Run]) -> None:
    run = drive(start_run(script(ASKS)))  # the reviewer asks for changes every time

    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.iteration == 3
    assert run.llm_calls.filter(role="reviewer").count() == 3
    assert exchange(run) == [(1, "send_back"), (2, "send_back"), (3, "to_person")]
    publish = pending(run)  # the human gate decides, as without a reviewer
    assert publish.iteration == 3
    assert publish.payload["second_opinion"]["verdict"] == "request_changes"


def test_no_attempt_left_means_no_send_back(start_run: Callable[..., Run]) -> None:
    run = drive(start_run(script(ASKS), max_iterations=1))

    assert (run.status, run.iteration) == (Run.Status.SUCCEEDED, 1)
    assert exchange(run) == [(1, "to_person")]


def test_a_rework_that_fails_on_the_last_attempt_leaves_the_passing_one_for_the_person(
        start_run: Callable[..., Run]) -> None:
    steps = script(ASKS)
    broken = steps["implementer"][0].replace('f"Hello, {name}!"', 'f"Hi, {name.strip()}!"')
    assert broken != steps["implementer"][0]
    run = drive(start_run({**steps, "implementer": [steps["implementer"][0], broken]},
                          max_iterations=2))

    assert run.status == Run.Status.SUCCEEDED, run.error
    first, second = iterations(run)
    assert first.succeeded and not second.succeeded
    assert run.best_iteration_id == first.id
    publish = pending(run)  # what passed goes to the person, not the broken rework
    assert publish.kind == ApprovalRequest.Kind.PUBLISH and publish.iteration == 1


@pytest.mark.parametrize("reply", ["Changes needed: strip the name first.",
                                   "VERDICT: request_changes"],
                         ids=["no-verdict-line", "no-reasons"])
def test_an_unreadable_review_never_sends_work_back(
        start_run: Callable[..., Run], reply: str) -> None:
    run = drive(start_run(script(reply)))

    assert (run.status, run.iteration) == (Run.Status.SUCCEEDED, 1)
    assert run.llm_calls.filter(role="implementer").count() == 1
    assert exchange(run) == []
    (only,) = iterations(run)
    assert not any(f.startswith(SENT_BACK) for f in only.failures)


def send_back_form(text: str) -> dict[str, str]:
    """The hidden fields of the change request's one-click form."""
    found = re.search(r'<form[^>]*class="send-back-form"[^>]*>(.*?)</form>', text, re.S)
    assert found is not None, "no button to send the work back"
    assert "Send back with the reviewer's reasons" in html.unescape(found.group(1))
    return {name: html.unescape(value) for name, value in
            re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', found.group(1))}


def test_semi_autonomy_the_person_sends_back_with_one_click(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    run = drive(start_run(script(ASKS, APPROVES), autonomy="semi"))
    deciding.approval_decide(approval=pending(run), user=people["reviewer"],
                             decision="approve", dispatch=None)  # the plan
    run = drive(run)

    change = pending(run)
    assert change.kind == ApprovalRequest.Kind.CHANGE and change.iteration == 1
    assert any("reviewing model asks for changes" in r for r in change.payload["reasons"])
    review_page = page(people["reviewer"], "approval_detail", change.pk)
    data = send_back_form(review_page)
    assert data["decision"] == "request_changes" and REMARK in data["comment"]
    # A requester (who may not decide here) gets no button.
    assert "send-back-form" not in page(people["requester"], "approval_detail", change.pk)

    client = Client()
    client.force_login(people["reviewer"])
    response = client.post(reverse("approval_decide", args=[change.pk]), data)
    assert response.status_code == 302
    change.refresh_from_db()
    assert change.status == ApprovalRequest.Status.CHANGES_REQUESTED
    audit = AuditEntry.objects.get(action="approval.request_changes")
    assert REMARK in (audit.after or {})["comment"]
    assert audit.actor_name == people["reviewer"].username

    final = drive(run)
    assert final.status == Run.Status.SUCCEEDED, final.error
    assert REMARK in prompts(final, "implementer")[1]
    assert REMARK not in final.guidance  # findings of the attempt, not guidance for ever
    assert exchange(final) == [(1, "sent_back_by_person")]
    assert pending(final).iteration == 2
    shown = html.unescape(page(people["reviewer"], "run_detail", final.pk))
    assert "A person sent the work back to the model with the reviewing model's reasons." in shown
