"""Approval gates: who decides, N approvals, stale candidates, the audit trail, notifications,
and two reviewers deciding at once (real threads, real PostgreSQL)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from django.urls import reverse

from runs.approval_rules import approval_candidate
from runs.models import ApprovalRequest, ApprovalVote, Iteration, Project, Run
from runs.services import approvals as services
from teams.models import AuditEntry, Notification
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.teams.conftest import Portal

A = ApprovalRequest.Status


@pytest.fixture
def waiting_run(portal: Portal) -> Run:
    """A run of quinn's project paused on a change request for iteration 2 (as the engine
    leaves it)."""
    project = ProjectFactory(team=portal.team, requester=portal.requester, name="weekly-scheduler",
                             status=Project.Status.AWAITING_APPROVAL)
    return run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL,
                            phase=Run.Phase.REFLECT)


@pytest.fixture
def change(waiting_run: Run) -> ApprovalRequest:
    return approval_for(waiting_run)


def decide_url(approval: ApprovalRequest) -> str:
    return reverse("approval_decide", args=[approval.pk])


def post_decision(portal: Portal, user: Any, approval: ApprovalRequest, decision: str,
                  comment: str = "", candidate: str | None = None, follow: bool = False) -> Any:
    data = {"decision": decision, "comment": comment,
            "candidate": candidate or approval_candidate(approval)}
    return portal.client(user).post(decide_url(approval), data, follow=follow)


# -- who may decide -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_review_page_three_users(portal: Portal, change: ApprovalRequest) -> None:
    url = reverse("approval_detail", args=[change.pk])
    reviewer_page = portal.client(portal.reviewer).get(url).content.decode()
    assert "Send decision" in reviewer_page
    assert "subprocess.run(payload[&quot;cmd&quot;], shell=True)" in reviewer_page  # the diff
    assert "B602" in reviewer_page and 'class="finding"' in reviewer_page  # flagged line
    assert "test_example_2" in reviewer_page  # test results
    assert "Added the schedule logic." in reviewer_page  # the loop's reasoning
    colleague_page = portal.client(portal.colleague).get(url).content.decode()
    assert "Send decision" not in colleague_page
    assert "Only reviewers and admins" in colleague_page
    assert portal.client(portal.outsider).get(url).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["colleague", "requester"])
def test_requesters_cannot_decide_by_default(portal: Portal, change: ApprovalRequest,
                                             who: str) -> None:
    response = post_decision(portal, getattr(portal, who), change, "approve")
    assert response.status_code == 403
    change.refresh_from_db()
    assert change.status == A.PENDING and not ApprovalVote.objects.exists()
    assert not AuditEntry.objects.filter(action__startswith="approval.").exists()


@pytest.mark.django_db
def test_outsider_gets_404_and_decides_nothing(portal: Portal, change: ApprovalRequest) -> None:
    assert post_decision(portal, portal.outsider, change, "approve").status_code == 404
    change.refresh_from_db()
    assert change.status == A.PENDING


@pytest.mark.django_db
def test_requester_may_decide_own_project_where_the_team_allows(
        portal: Portal, change: ApprovalRequest) -> None:
    portal.team.requester_may_approve = True
    portal.team.save()
    assert post_decision(portal, portal.colleague, change, "approve").status_code == 403
    response = post_decision(portal, portal.requester, change, "approve")
    assert response.status_code == 302
    change.refresh_from_db()
    assert change.status == A.APPROVED and change.decided_by == portal.requester


@pytest.mark.django_db
def test_reviewer_who_requested_the_project_is_treated_as_its_requester(
        portal: Portal) -> None:
    own = ProjectFactory(team=portal.team, requester=portal.reviewer)
    approval = approval_for(run_with_history(project=own))
    assert post_decision(portal, portal.reviewer, approval, "approve").status_code == 403
    assert post_decision(portal, portal.admin, approval, "approve").status_code == 302


# -- deciding ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_approve_resumes_the_run_audits_and_tells_the_requester(
        portal: Portal, change: ApprovalRequest, waiting_run: Run) -> None:
    token_before = waiting_run.step_token
    response = post_decision(portal, portal.reviewer, change, "approve", "Looks right.",
                             follow=True)
    assert response.redirect_chain[-1][1] == 302
    assert "Decision saved: approved." in response.content.decode()
    change.refresh_from_db()
    waiting_run.refresh_from_db()
    assert (change.status, change.decided_by, change.comment) == (A.APPROVED, portal.reviewer,
                                                                  "Looks right.")
    # The engine resumed the run: running again with a fresh step token (its message is sent
    # when the transaction commits; the worker test covers the delivery).
    assert waiting_run.status == Run.Status.RUNNING and waiting_run.step_token != token_before
    entry = AuditEntry.objects.get(action="approval.approve")
    assert entry.actor_name == "rita" and entry.before == {"status": "pending"}
    assert entry.after["status"] == "approved" and entry.after["comment"] == "Looks right."
    note = Notification.objects.get(user=portal.requester, kind=Notification.Kind.DECIDED)
    assert "rita decided the change request of “weekly-scheduler”: approved" in note.message


@pytest.mark.django_db
def test_request_changes_needs_a_comment_that_reaches_the_next_prompt(
        portal: Portal, change: ApprovalRequest, waiting_run: Run) -> None:
    refused = post_decision(portal, portal.reviewer, change, "request_changes", "  ")
    assert refused.status_code == 400
    assert "Write what the run should do differently" in refused.content.decode()
    post_decision(portal, portal.reviewer, change, "request_changes", "Use 24-hour times.")
    change.refresh_from_db()
    waiting_run.refresh_from_db()
    assert change.status == A.CHANGES_REQUESTED
    assert "Use 24-hour times." in waiting_run.guidance  # the engine's next prompts read it


@pytest.mark.django_db
def test_escalation_is_answered_with_guidance(portal: Portal, waiting_run: Run) -> None:
    Run.objects.filter(pk=waiting_run.pk).update(status=Run.Status.ESCALATED)
    escalation = approval_for(waiting_run, kind=ApprovalRequest.Kind.ESCALATION,
                              reason="same error three times", question="What now?")
    page = portal.client(portal.reviewer).get(
        reverse("approval_detail", args=[escalation.pk])).content.decode()
    assert "Answer with guidance" in page and "Stop the run" in page
    assert "same error three times" in page
    assert post_decision(portal, portal.reviewer, escalation, "approve").status_code == 400
    with pytest.raises(services.ApprovalError, match="decided with: answer with guidance, "):
        services.approval_vote_cast(approval=escalation, user=portal.reviewer,
                                    decision="approve", candidate=approval_candidate(escalation))
    assert post_decision(portal, portal.reviewer, escalation, "answer").status_code == 400
    post_decision(portal, portal.reviewer, escalation, "answer", "Parse days case-insensitively.")
    escalation.refresh_from_db()
    waiting_run.refresh_from_db()
    assert escalation.status == A.ANSWERED
    assert "Parse days case-insensitively." in waiting_run.guidance


@pytest.mark.django_db
def test_required_approvals_open_the_gate_at_n(portal: Portal, change: ApprovalRequest,
                                               waiting_run: Run) -> None:
    portal.team.required_approvals = 2
    portal.team.save()
    first = post_decision(portal, portal.reviewer, change, "approve", "ok by me", follow=True)
    assert "1 of 2 approvals; 1 more needed" in first.content.decode()
    post_decision(portal, portal.reviewer, change, "approve", "still ok")  # again: replaces
    change.refresh_from_db()
    assert change.status == A.PENDING and change.votes.count() == 1
    post_decision(portal, portal.admin, change, "approve", "agreed")
    change.refresh_from_db()
    waiting_run.refresh_from_db()
    assert change.status == A.APPROVED and change.decided_by == portal.admin
    assert change.comment == "rita: still ok\nalice: agreed"
    assert waiting_run.status == Run.Status.RUNNING
    assert list(AuditEntry.objects.filter(action="approval.approve").order_by("id")
                .values_list("after__status", flat=True)) == ["pending", "pending", "approved"]


@pytest.mark.django_db
def test_any_reject_closes_the_gate(portal: Portal, change: ApprovalRequest) -> None:
    portal.team.required_approvals = 3
    portal.team.save()
    post_decision(portal, portal.reviewer, change, "approve")
    post_decision(portal, portal.admin, change, "reject", "Never shell out.")
    change.refresh_from_db()
    assert change.status == A.REJECTED and change.comment == "Never shell out."


@pytest.mark.django_db
def test_a_decided_request_refuses_later_decisions(portal: Portal,
                                                   change: ApprovalRequest) -> None:
    post_decision(portal, portal.reviewer, change, "approve")
    late = post_decision(portal, portal.admin, change, "reject", "too late?")
    assert late.status_code == 200 or late.status_code == 409
    change.refresh_from_db()
    assert change.status == A.APPROVED and change.decided_by == portal.reviewer


# -- stale candidates ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_decision_on_a_changed_candidate_is_refused_and_the_comment_kept(
        portal: Portal, change: ApprovalRequest) -> None:
    seen = approval_candidate(change)
    ApprovalRequest.objects.filter(pk=change.pk).update(
        payload={**change.payload, "diff": "a different candidate"})
    response = post_decision(portal, portal.reviewer, change, "approve",
                             "my careful review notes", candidate=seen)
    assert response.status_code == 409
    html = response.content.decode()
    assert "The candidate changed since you opened this page" in html
    assert "my careful review notes" in html  # nothing typed is lost
    change.refresh_from_db()
    assert change.status == A.PENDING and not change.votes.exists()
    # The page now carries the current candidate: sending again after looking works.
    assert f'value="{approval_candidate(change)}"' in html and seen not in html
    assert post_decision(portal, portal.reviewer, change, "approve").status_code == 302


@pytest.mark.django_db
def test_decision_after_a_newer_iteration_is_refused(portal: Portal, change: ApprovalRequest,
                                                     waiting_run: Run) -> None:
    Iteration.objects.create(run=waiting_run, number=3, files={})
    response = post_decision(portal, portal.reviewer, change, "approve")
    assert response.status_code == 409
    change.refresh_from_db()
    assert change.status == A.PENDING


@pytest.mark.django_db
def test_votes_on_a_replaced_candidate_stop_counting(portal: Portal, change: ApprovalRequest,
                                                     waiting_run: Run) -> None:
    portal.team.required_approvals = 2
    portal.team.save()
    post_decision(portal, portal.reviewer, change, "approve")
    ApprovalRequest.objects.filter(pk=change.pk).update(payload={"reasons": ["new candidate"]})
    change.refresh_from_db()
    post_decision(portal, portal.admin, change, "approve")
    change.refresh_from_db()
    assert change.status == A.PENDING  # rita's vote was for the old candidate


@pytest.mark.django_db
def test_a_new_request_replaces_the_pending_one_and_notifies_reviewers(
        portal: Portal, change: ApprovalRequest, waiting_run: Run,
        django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        newer = approval_for(waiting_run, iteration=3)
    change.refresh_from_db()
    assert change.status == A.STALE
    assert AuditEntry.objects.filter(action="approval.superseded",
                                     target_id=str(change.pk)).exists()
    notified = set(Notification.objects.filter(approval=newer).values_list("user__username",
                                                                            flat=True))
    assert notified == {"alice", "rita"}  # deciders only: not the requester, not colleagues
    stale_page = post_decision(portal, portal.reviewer, change, "approve")
    assert stale_page.status_code == 409
    assert "This request was replaced" in stale_page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        from projects.services.notifications import notifications_approval_requested
        assert notifications_approval_requested(approval=newer) == 0  # idempotent


# -- two reviewers at once ----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_deciding_at_once_make_exactly_one_decision(
        portal: Portal, clean_redis: object) -> None:
    """Two threads, two database connections, released together by a barrier."""
    project = ProjectFactory(team=portal.team, requester=portal.requester)
    run = run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL)
    approval = approval_for(run)
    candidate = approval_candidate(approval)
    barrier = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def decide(user: Any, decision: str) -> None:
        try:
            barrier.wait(timeout=10)
            outcomes[user.username] = services.approval_vote_cast(
                approval=ApprovalRequest.objects.get(pk=approval.pk), user=user,
                decision=decision, comment=f"{decision} by {user.username}",
                candidate=candidate)
        except services.ApprovalError as error:
            outcomes[user.username] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(portal.reviewer, "approve")),
               threading.Thread(target=decide, args=(portal.admin, "reject"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    winners = [o for o in outcomes.values() if isinstance(o, services.VoteOutcome)]
    losers = [o for o in outcomes.values() if isinstance(o, services.AlreadyDecided)]
    assert len(winners) == 1 and len(losers) == 1, outcomes
    approval.refresh_from_db()
    assert approval.status == winners[0].approval.status
    assert approval.votes.count() == 1  # the loser's vote was rolled back with its attempt
    assert AuditEntry.objects.filter(action__in=["approval.approve", "approval.reject"]
                                     ).count() == 1
    assert "already decided" in str(losers[0])


@pytest.mark.django_db
def test_an_escalation_says_what_is_wrong_in_plain_words_with_the_codes_folded(
        portal: Portal, waiting_run: Run) -> None:
    """The probe's escalation page led with "reply 854ed47e...", "reset_context,
    try_alternative" and raw pytest traces."""
    Run.objects.filter(pk=waiting_run.pk).update(status=Run.Status.ESCALATED)
    escalation = approval_for(
        waiting_run, kind=ApprovalRequest.Kind.ESCALATION,
        reason="the model gave the same reply again: asking a person for guidance",
        details="loop detector: identical_replies (reply 854ed47e); escape: escalate; "
                "escapes already tried: reset_context, try_alternative",
        failures=["tests/test_acceptance.py::test_example_1 AssertionError: assert 1 == 2"],
        question="What now?")
    page = portal.client(portal.reviewer).get(
        reverse("approval_detail", args=[escalation.pk])).content.decode()
    section = page.split('id="reasoning-heading"', 1)[1].split("</section>", 1)[0]
    plain = section.split("<details>", 1)[0]
    assert "the model gave the same reply again" in plain
    assert "1 check of the candidate failed." in plain
    for code in ("reset_context", "identical_replies", "854ed47e", "assert 1 == 2"):
        assert code not in plain, code
        assert code in section, code  # still there, folded, for whoever wants it

