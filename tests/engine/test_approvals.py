"""The engine's side of approvals: the run pauses durably on a pending request, a decision
moves it on (or ends it), and of two concurrent decisions exactly one wins."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection

from runs.approval_rules import StaleCandidate
from runs.models import ApprovalRequest, Project, Run
from runs.selectors import results as selectors
from runs.services import deciding, driving, finishing
from tests.engine.conftest import DispatchRecorder, iterations, prompts

pytestmark = pytest.mark.django_db


def drive(run: Run) -> Run:
    return driving.run_drive(run_id=run.id)


def decide(approval: ApprovalRequest, user: Any, decision: str, comment: str = "") -> Any:
    return deciding.approval_decide(approval=approval, user=user, decision=decision,
                                    comment=comment, dispatch=None)


def pending(run: Run) -> ApprovalRequest:
    approval = selectors.pending_approval(run)
    assert approval is not None, f"run {run.id} has no pending approval ({run.status})"
    return approval


@pytest.mark.slow
def test_semi_autonomy_waits_for_the_plan_then_continues(
        start_run: Callable[..., Run], people: dict[str, Any],
        django_capture_on_commit_callbacks: Any) -> None:
    run = drive(start_run("success", autonomy="semi"))

    assert (run.status, run.phase, run.iteration) == (Run.Status.AWAITING_APPROVAL,
                                                      Run.Phase.IMPLEMENT, 0)
    plan = pending(run)
    assert plan.kind == "plan" and "greet" in plan.payload["plan"]
    assert run.project.status == Project.Status.AWAITING_APPROVAL
    assert driving.run_drive(run_id=run.id).llm_calls.count() == 1, "waiting does nothing"

    dispatch = DispatchRecorder()
    with django_capture_on_commit_callbacks(execute=True):
        deciding.approval_decide(approval=plan, user=people["reviewer"], decision="approve",
                                 dispatch=dispatch)
    resumed = Run.objects.get(id=run.id)
    assert dispatch.sent == [(run.id, resumed.step_token, 0)]
    assert resumed.status == Run.Status.RUNNING

    final = drive(resumed)
    assert final.status == Run.Status.SUCCEEDED
    assert final.llm_calls.filter(role="architect").count() == 1
    assert pending(final).kind == "publish"


def test_a_rejected_plan_is_planned_again_with_the_comment(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    run = drive(start_run("success", autonomy="semi"))
    decide(pending(run), people["reviewer"], "reject", "Validate that name is a string.")

    again = drive(Run.objects.get(id=run.id))
    assert again.status == Run.Status.AWAITING_APPROVAL
    assert pending(again).kind == "plan"
    second_prompt = prompts(again, "architect")[1]
    assert "Validate that name is a string." in second_prompt
    assert again.approvals.filter(kind="plan", status="rejected").count() == 1


@pytest.mark.slow
def test_guided_autonomy_asks_for_every_change(start_run: Callable[..., Run],
                                               people: dict[str, Any]) -> None:
    run = drive(start_run("fixed_on_second", autonomy="guided"))
    decide(pending(run), people["reviewer"], "approve")  # the plan

    run = drive(run)
    change = pending(run)
    assert (change.kind, change.iteration) == ("change", 1)
    assert "guided" in change.payload["reasons"][0]
    assert "Hello {name}" in change.payload["diff"]
    assert change.payload["test_report"]["failed"] >= 1
    decide(change, people["reviewer"], "approve")

    run = drive(run)
    second = pending(run)
    assert (second.kind, second.iteration, second.payload["succeeded"]) == ("change", 2, True)
    decide(second, people["reviewer"], "approve")
    assert drive(run).status == Run.Status.SUCCEEDED


@pytest.mark.slow
def test_a_permissions_request_is_a_major_change(start_run: Callable[..., Run],
                                                 people: dict[str, Any]) -> None:
    run = drive(start_run("permissions_request", autonomy="semi"))
    decide(pending(run), people["reviewer"], "approve")  # the plan

    run = drive(run)
    change = pending(run)
    assert change.kind == "change"
    assert any("new permissions" in reason for reason in change.payload["reasons"])
    assert change.payload["permissions_change"]["to"]["network"] is True
    decide(change, people["reviewer"], "approve")

    final = drive(run)
    assert final.status == Run.Status.SUCCEEDED
    assert "network = true" in final.best_iteration.files["plugin.toml"]
    assert 'name = "greeter"' in final.best_iteration.files["plugin.toml"]


@pytest.mark.slow
def test_a_rejected_change_ends_the_run(start_run: Callable[..., Run],
                                        people: dict[str, Any]) -> None:
    run = drive(start_run("fixed_on_second", autonomy="guided"))
    decide(pending(run), people["reviewer"], "approve")
    run = drive(run)
    decide(pending(run), people["reviewer"], "reject", "This is not what we asked for.")

    final = drive(run)
    assert final.status == Run.Status.FAILED
    assert "rejected by" in final.error and "not what we asked for" in final.error
    assert final.project.status == Project.Status.FAILED


@pytest.mark.slow
def test_requested_changes_go_into_the_next_prompt(start_run: Callable[..., Run],
                                                   people: dict[str, Any]) -> None:
    run = drive(start_run("fixed_on_second", autonomy="guided"))
    decide(pending(run), people["reviewer"], "approve")
    run = drive(run)
    decide(pending(run), people["reviewer"], "request_changes", "Greet with a comma, please.")

    run = drive(run)
    assert "Greet with a comma, please." in prompts(run, "implementer")[1]
    assert pending(run).iteration == 2


@pytest.mark.slow
def test_an_escalation_answer_becomes_guidance(start_run: Callable[..., Run],
                                               people: dict[str, Any]) -> None:
    run = drive(start_run("same_wrong_forever", max_iterations=12))
    escalation = pending(run)
    assert run.status == Run.Status.ESCALATED
    asked_at = run.iteration

    decide(escalation, people["reviewer"], "answer", "Put a comma after Hello.")
    final = drive(Run.objects.get(id=run.id))
    replan = prompts(final, "architect")[-1] if final.iteration > asked_at else ""
    assert "Put a comma after Hello." in prompts(final, "implementer")[asked_at]
    assert "A person was asked for help" in prompts(final, "implementer")[asked_at]
    assert "Put a comma after Hello." in replan
    assert final.escalations_answered == 1
    # The same mistake goes on: the run stops or asks again, it never burns every iteration.
    assert final.status in (Run.Status.ESCALATED, Run.Status.ABORTED)
    assert final.iteration < final.max_iterations


def test_an_answer_needs_guidance_and_publish_cannot_request_changes(
        start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    run = drive(start_run("success", autonomy="semi"))
    plan = pending(run)
    with pytest.raises(deciding.ApprovalInputError, match="Only escalations"):
        decide(plan, people["reviewer"], "answer", "x")
    with pytest.raises(deciding.ApprovalInputError, match="Say which changes"):
        decide(plan, people["reviewer"], "request_changes", "  ")
    with pytest.raises(deciding.ApprovalInputError, match="Unknown decision"):
        decide(plan, people["reviewer"], "maybe")
    assert pending(run).id == plan.id, "bad input loses nothing"


def test_who_may_decide(start_run: Callable[..., Run], people: dict[str, Any]) -> None:
    run = drive(start_run("success", autonomy="semi"))
    plan = pending(run)
    for user in (people["outsider"], people["requester"]):
        with pytest.raises(PermissionDenied):
            deciding.approval_decide(approval=plan, user=user, decision="approve", dispatch=None)
    team = people["team"]
    team.requester_may_approve = True
    team.save()
    deciding.approval_decide(approval=ApprovalRequest.objects.get(id=plan.id),
                             user=people["requester"], decision="approve", dispatch=None)
    assert ApprovalRequest.objects.get(id=plan.id).status == "approved"


@pytest.mark.slow
def test_publish_approval_marks_the_project_succeeded(start_run: Callable[..., Run],
                                                      people: dict[str, Any]) -> None:
    run = drive(start_run("success"))
    publish = pending(run)
    assert publish.payload["pass_rate"] == 1.0 and "greeter/plugin.py" in publish.payload["files"]
    with pytest.raises(deciding.ApprovalInputError):
        decide(publish, people["reviewer"], "request_changes", "more tests")
    decide(publish, people["reviewer"], "approve")
    assert Project.objects.get(id=run.project_id).status == Project.Status.SUCCEEDED
    assert Run.objects.get(id=run.id).status == Run.Status.SUCCEEDED


def test_cancel_while_waiting_makes_the_request_stale(start_run: Callable[..., Run],
                                                      people: dict[str, Any]) -> None:
    run = drive(start_run("success", autonomy="semi"))
    plan = pending(run)
    finishing.run_cancel(run=run)

    assert Run.objects.get(id=run.id).status == Run.Status.CANCELLED
    with pytest.raises(StaleCandidate, match="no longer open"):
        decide(plan, people["reviewer"], "approve")


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_decisions_exactly_one_wins(start_run: Callable[..., Run],
                                                   people: dict[str, Any]) -> None:
    run = drive(start_run("success", autonomy="semi"))
    plan = pending(run)
    barrier = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def decide_as(label: str, decision: str) -> None:
        barrier.wait()
        try:
            deciding.approval_decide(approval=plan, user=people["reviewer"], decision=decision,
                                     comment="no", dispatch=None)
            outcomes[label] = "won"
        except deciding.ApprovalConflict as error:
            outcomes[label] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=decide_as, args=("approve", "approve")),
               threading.Thread(target=decide_as, args=("reject", "reject"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(isinstance(v, deciding.ApprovalConflict) for v in outcomes.values()) == [
        False, True]
    winner = next(label for label, value in outcomes.items() if value == "won")
    loser = next(value for value in outcomes.values() if value != "won")
    decided = ApprovalRequest.objects.get(id=plan.id)
    assert decided.status == {"approve": "approved", "reject": "rejected"}[winner]
    assert f"already decided ({decided.status})" in str(loser)
    assert Run.objects.get(id=run.id).status == Run.Status.RUNNING
    assert len(iterations(run)) == 0
