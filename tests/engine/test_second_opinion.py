"""The reviewing model's second opinion: asked when a candidate reaches a person (a change to
approve, the publish request of a run that succeeded), kept on the approval request and shown on
its page; an empty, rambling or failing reviewer never costs the run anything.

The model is the scripted provider (docs/llm.md, "The scripted provider"), the stand-in for a
hosted LLM that cannot be
reached here; the sandbox, the services and the approval page are the production code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.llm import LLMServerError, Message, ScriptedProvider
from runs.models import ApprovalRequest, LLMCall, Run
from runs.selectors import results as selectors
from runs.services import deciding, driving
from tests.engine.conftest import iterations, load_script

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

BOX = "Second opinion (the reviewing model)"
REMARK = "a name with spaces around it is greeted as typed; strip it first."


def drive(run: Run) -> Run:
    return driving.run_drive(run_id=run.id)


def pending(run: Run) -> ApprovalRequest:
    approval = selectors.pending_approval(run)
    assert approval is not None, f"run {run.id} has no pending approval ({run.status})"
    return approval


def approval_page(approval: ApprovalRequest, user: Any) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("approval_detail", args=[approval.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_publish_request_carries_the_reviewers_opinion(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    # One attempt only: with more, full autonomy sends "changes needed" back into the loop
    # (tests/engine/test_reviewer_sends_back.py).
    run = drive(start_run("reviewed", max_iterations=1))

    assert run.status == Run.Status.SUCCEEDED
    publish = pending(run)
    assert publish.kind == ApprovalRequest.Kind.PUBLISH
    opinion = publish.payload["second_opinion"]
    assert (opinion["verdict"], opinion["iteration"]) == ("request_changes", 1)
    assert REMARK in opinion["remarks"] and "VERDICT" not in opinion["remarks"]
    # The reviewer was shown the candidate and what the checks found.
    call = run.llm_calls.get(role="reviewer")
    prompt = next(m["content"] for m in call.messages if m["role"] == "user")
    assert 'f"Hello, {name}!"' in prompt
    assert "Tests: 4 passed, 0 failed, 0 errors (pass rate 100%)" in prompt
    # Its tokens count like any other call's: on the run and on the iteration.
    (first,) = iterations(run)
    assert call.prompt_tokens > 0
    assert first.tokens == sum(c.prompt_tokens + c.completion_tokens
                               for c in LLMCall.objects.filter(run=run))
    assert run.tokens_total == first.tokens

    page = approval_page(publish, people["reviewer"])
    assert BOX in page and "Would ask for changes" in page
    assert "advice only: the decision is yours" in page
    assert "greeted as typed; strip it first." in page


def test_a_change_waiting_for_a_person_shows_the_opinion_and_is_reviewed_once(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    script = {**load_script("reviewed"), "reviewer": ["VERDICT: unsure\nI cannot tell."]}
    run = drive(start_run(script, autonomy="guided"))
    deciding.approval_decide(approval=pending(run), user=people["reviewer"],
                             decision="approve", dispatch=None)  # the plan
    run = drive(run)

    change = pending(run)
    assert change.kind == ApprovalRequest.Kind.CHANGE
    assert change.payload["second_opinion"] == {"verdict": "unsure", "remarks": "I cannot tell.",
                                                "iteration": 1}
    page = approval_page(change, people["requester"])
    assert BOX in page and "Not sure" in page and "I cannot tell." in page

    deciding.approval_decide(approval=change, user=people["reviewer"], decision="approve",
                             dispatch=None)
    final = drive(run)
    assert final.status == Run.Status.SUCCEEDED
    # The same candidate goes on to be published: its opinion goes along, not a second call.
    assert pending(final).payload["second_opinion"]["verdict"] == "unsure"
    assert final.llm_calls.filter(role="reviewer").count() == 1


@pytest.mark.parametrize("reply", ["", "Looks good to me, ship it!"],
                         ids=["silent", "no-verdict-line"])
def test_a_silent_or_rambling_reviewer_gives_no_opinion(
        start_run: Callable[..., Run], people: dict[str, Any], reply: str) -> None:
    run = drive(start_run({**load_script("success"), "reviewer": [reply]}))

    assert run.status == Run.Status.SUCCEEDED
    publish = pending(run)
    assert "second_opinion" not in publish.payload
    assert BOX not in approval_page(publish, people["reviewer"])


class FailingReviewer(ScriptedProvider):
    """A model endpoint that fails for the reviewer only (the hosted LLM is the boundary)."""

    name = "flaky"

    def _attempt(self, messages: list[Message], **kwargs: Any) -> Any:
        if kwargs["role"] == "reviewer":
            raise LLMServerError("HTTP 500: the server is overloaded")
        return super()._attempt(messages, **kwargs)


def test_a_failing_reviewer_call_never_breaks_the_run(start_run: Callable[..., Run]) -> None:
    provider = FailingReviewer(load_script("reviewed"))
    run = start_run({}, provider="flaky")  # needs no configured model
    final = driving.run_drive(run_id=run.id, provider_factory=lambda run, role: provider)

    assert final.status == Run.Status.SUCCEEDED, final.error
    assert final.error == ""
    failed = final.llm_calls.get(role="reviewer")
    assert failed.error.startswith("LLMServerError")  # on record, with what went wrong
    assert "second_opinion" not in pending(final).payload
