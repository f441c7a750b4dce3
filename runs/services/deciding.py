"""What deciding an approval request does to its run: approving or rejecting a plan, a change,
an escalation, a budget or a publish request. Who may decide, and when a decision counts, are
the approval rules (runs/approval_rules.py); votes are runs/services/approvals.py."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from autocoder.engine import loop, second_opinion
from runs import approval_rules, budgets
from runs.models import ApprovalRequest, Iteration, LoopEvent, Run
from runs.pending import pending_carried, pending_ending, run_pending
from runs.services.common import run_notify
from runs.services.outbox import Dispatch, enqueue_step
from runs.services.project_status import project_publish_decided
from runs.services.waiting import run_continue

MAX_GUIDANCE_CHARS = 4000


# The approval rules' refusals under the names callers know (the rules, and the one
# refusal type they all are, live in runs/approval_rules.py).
ApprovalConflict = approval_rules.AlreadyDecided  # somebody else decided the request first
ApprovalInputError = approval_rules.DecisionNotAccepted  # e.g. an answer without guidance


def approval_decide(*, approval: ApprovalRequest, user: User, decision: str,
                    comment: str = "", dispatch: Dispatch | None = enqueue_step) -> ApprovalRequest:
    """Decide `approval` as `user` and move the run on, under the approval rules
    (runs/approval_rules.py): who may decide, what the decision does, a candidate changed
    since `approval` was read, and N approvals (a decision made here counts as the decider's
    own vote). A refusal is an ApprovalRefused and changes nothing. Exactly one of two
    concurrent decisions wins; the other gets ApprovalConflict naming the decision made."""
    with transaction.atomic():
        locked = (ApprovalRequest.objects.select_for_update(of=("self",))
                  .select_related("project__team", "decided_by", "run").get(id=approval.id))
        status = approval_rules.check_decision(
            locked, user=user, decision=decision, comment=comment,
            candidate=approval_rules.approval_candidate(approval))
        approval_rules.check_enough_approvals(locked, user=user, decision=decision)
        won = ApprovalRequest.objects.filter(id=approval.id, status=ApprovalRequest.Status.PENDING
                                             ).update(status=status, decided_by=user,
                                                      decided_at=timezone.now(),
                                                      comment=comment.strip())
        if not won:  # the row lock above makes this unreachable; kept as a guard
            raise ApprovalConflict(approval_rules.already_decided_message(
                ApprovalRequest.objects.select_related("decided_by").get(id=approval.id)))
        decided = ApprovalRequest.objects.select_related("run", "project").get(id=approval.id)
        run = Run.objects.select_for_update().select_related("project").get(id=decided.run_id)
        _apply_decision(run, decided, dispatch)
    return ApprovalRequest.objects.get(id=approval.id)


def _apply_decision(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    handlers: dict[str, Callable[[Run, ApprovalRequest, Dispatch | None], None]] = {
        ApprovalRequest.Kind.PLAN: _decide_plan,
        ApprovalRequest.Kind.CHANGE: _decide_change,
        ApprovalRequest.Kind.ESCALATION: _decide_escalation,
        ApprovalRequest.Kind.PUBLISH: _decide_publish,
        ApprovalRequest.Kind.BUDGET: _decide_budget,
    }
    handlers[approval.kind](run, approval, dispatch)
    run_notify(run, {"kind": "run.approval_decided", "approval_id": approval.id,
                     "approval_kind": approval.kind, "decision": approval.status})


def _add_guidance(run: Run, approval: ApprovalRequest) -> None:
    who = approval.decided_by.get_username() if approval.decided_by else "a reviewer"
    note = f"[{approval.kind}, attempt {approval.iteration}, {who}] {approval.comment}"
    run.guidance = f"{run.guidance}\n{note}".strip()[-MAX_GUIDANCE_CHARS:]


def _decide_plan(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    if approval.status != ApprovalRequest.Status.APPROVED:
        # A rejected plan is planned again, with the reviewer's comment as guidance.
        if approval.comment:
            _add_guidance(run, approval)
        run.phase = Run.Phase.PLAN
    run_continue(run, dispatch)


def _decide_change(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    carry = pending_carried(run)
    if approval.status == ApprovalRequest.Status.REJECTED:
        who = approval.decided_by.get_username() if approval.decided_by else "a reviewer"
        reason = f"change of attempt {approval.iteration} rejected by {who}"
        run.phase = Run.Phase.LEARN
        run.pending = pending_ending(carry, Run.Status.FAILED,
                                     f"{reason}: {approval.comment}".strip(": "))
    elif approval.status == ApprovalRequest.Status.CHANGES_REQUESTED:
        if not _send_back_with_review(run, approval):
            _add_guidance(run, approval)
        if run.phase == Run.Phase.LEARN:  # the iteration passed, but not to the reviewer's taste
            exhausted = loop.budget_exhausted(run, run.iteration)
            run.pending = (pending_ending(carry, Run.Status.FAILED, exhausted)
                           if exhausted else carry)
            run.phase = Run.Phase.LEARN if exhausted else Run.Phase.IMPLEMENT
    run_continue(run, dispatch)


def _send_back_with_review(run: Run, approval: ApprovalRequest) -> bool:
    """A person sent the change back with the reviewing model's reasons as they are (its
    button on the change request): they become findings of the iteration, which the next
    prompts read like failing tests (docs/engine.md, "The reviewer model")."""
    remarks = second_opinion.sent_back_with_review(approval.payload or {}, approval.comment)
    if not remarks:
        return False
    iteration = Iteration.objects.filter(run=run, number=approval.iteration).first()
    if iteration is not None:
        iteration.failures = [*iteration.failures, second_opinion.review_finding(remarks)]
        iteration.save(update_fields=["failures"])
    LoopEvent.objects.create(run=run, **second_opinion.review_event(
        approval.iteration, "sent_back_by_person", remarks))
    return True


def _decide_escalation(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    if approval.status == ApprovalRequest.Status.REJECTED:
        who = approval.decided_by.get_username() if approval.decided_by else "a reviewer"
        run.phase = Run.Phase.LEARN
        run.pending = pending_ending(
            run_pending(run), Run.Status.ABORTED,
            f"stopped by {who} at an escalation: {approval.comment}".strip(": "))
    else:
        _add_guidance(run, approval)
        run.escalations_answered += 1
        run.escape_in_force = "escalate"
        run.since_iteration = run.iteration  # judge the guided attempts on their own
        run.phase = Run.Phase.PLAN
    run_continue(run, dispatch)


def _decide_budget(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    if approval.status == ApprovalRequest.Status.APPROVED:
        budgets.budget_raise(run, approval.payload or {})
    else:
        who = approval.decided_by.get_username() if approval.decided_by else "a team admin"
        run.phase = Run.Phase.LEARN
        run.pending = pending_ending(
            run_pending(run), Run.Status.ABORTED,
            f"stopped at its budget by {who}: {approval.comment}".strip(": "))
    run_continue(run, dispatch)


def _decide_publish(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    approved = approval.status == ApprovalRequest.Status.APPROVED
    if not approved and _publish_approved_before(approval):
        return  # only the new combination was refused; the plugin itself stays approved
    project_publish_decided(run.project, approved=approved)


def _publish_approved_before(approval: ApprovalRequest) -> bool:
    return ApprovalRequest.objects.filter(
        run_id=approval.run_id, kind=ApprovalRequest.Kind.PUBLISH,
        status=ApprovalRequest.Status.APPROVED).exclude(pk=approval.pk).exists()
