"""Deciding approval requests the way trusted review systems do.

- Only team members with the reviewer or admin role decide; whoever requested the project only
  where the team allows it (Team.requester_may_approve).
- A decision names the candidate it was made on; a decision on a replaced (stale) candidate is
  refused, and votes on a replaced candidate stop counting.
- Whoever started or retried the run is treated like the project's author (`is_author`).
- A team may require N approvals: each reviewer's vote is kept (one per user); the gate opens at
  N approvals; any reject or request for changes closes it at once. A vote counts only while its
  voter may still decide (re-checked at every tally: someone who left the team or lost the
  reviewer role no longer counts).
- Concurrent decisions are serialised on the request's row and the engine's guarded update
  (`filter(status="pending").update(...)`) makes exactly one of them the decision.
- Every vote and decision is in the audit log; the run resumes as soon as the decision commits
  (the engine's approval_decide enqueues its next step).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction

from autocoder.engine import services as engine
from projects.models import ApprovalRequest, ApprovalVote, Iteration, Membership
from projects.selectors.approvals import Tally, approval_candidate, approval_tally, may_decide
from projects.services.audit import audit_record
from projects.services.notifications import notification_decision_send

Decision = ApprovalVote.Decision
# Decisions that end the request whatever the other reviewers think.
CLOSING = frozenset({Decision.REJECT, Decision.REQUEST_CHANGES, Decision.ANSWER})


class ApprovalError(Exception):
    """The decision was refused; the message says why in plain words."""


class StaleCandidate(ApprovalError):
    """The candidate changed (or the request was replaced) since the reviewer looked at it."""


class AlreadyDecided(ApprovalError):
    """Somebody else's decision closed the request first."""


@dataclass(frozen=True)
class VoteOutcome:
    approval: ApprovalRequest
    vote: ApprovalVote
    tally: Tally
    decided: bool

    @property
    def message(self) -> str:
        if self.decided:
            return f"Decision saved: {self.approval.get_status_display().lower()}."
        return (f"Your approval is recorded: {self.tally.approvals} of {self.tally.needed} "
                f"approvals; {self.tally.remaining} more needed before the run continues.")


def _check_member(approval: ApprovalRequest, user: User) -> None:
    membership = Membership.objects.filter(team_id=approval.project.team_id, user=user).first()
    if membership is None or not may_decide(membership=membership, project=approval.project,
                                            team=approval.project.team, run=approval.run):
        if approval.project.requester_id == user.pk:
            raise PermissionDenied("This team does not let requesters decide approval requests "
                                   "on their own projects; a reviewer has to.")
        if membership is not None and approval.run.started_by_id == user.pk:
            raise PermissionDenied("You started this run, so its gates are your own change: "
                                   "another reviewer has to decide them.")
        raise PermissionDenied("Only reviewers and admins of the team can decide approval "
                               "requests.")


def _check_open(locked: ApprovalRequest, candidate: str) -> None:
    if locked.status == ApprovalRequest.Status.STALE:
        raise StaleCandidate("This request was replaced: the run has moved on since. Nothing was "
                             "decided; review the current candidate instead.")
    if locked.status != ApprovalRequest.Status.PENDING:
        who = locked.decided_by.get_username() if locked.decided_by else "someone"
        raise AlreadyDecided(f"This request was already decided "
                             f"({locked.get_status_display().lower()}) by {who}.")
    if candidate != approval_candidate(locked) or _newer_iteration_exists(locked):
        raise StaleCandidate("The candidate changed since you opened this page, so your decision "
                             "was not saved. Review the current version and send it again.")


def _newer_iteration_exists(approval: ApprovalRequest) -> bool:
    # A change or publish request is about one iteration's code; once the loop has written a
    # later iteration, deciding on the older one would approve code that is no longer current.
    if approval.kind not in (ApprovalRequest.Kind.CHANGE, ApprovalRequest.Kind.PUBLISH):
        return False
    return Iteration.objects.filter(run_id=approval.run_id, number__gt=approval.iteration).exists()


# What each kind of request accepts (the engine enforces the same when the request is decided).
ALLOWED: dict[str, set[Decision]] = {
    ApprovalRequest.Kind.PLAN: {Decision.APPROVE, Decision.REJECT, Decision.REQUEST_CHANGES},
    ApprovalRequest.Kind.CHANGE: {Decision.APPROVE, Decision.REJECT, Decision.REQUEST_CHANGES},
    ApprovalRequest.Kind.ESCALATION: {Decision.ANSWER, Decision.REJECT},
    ApprovalRequest.Kind.PUBLISH: {Decision.APPROVE, Decision.REJECT},
}


def _check_decision(approval: ApprovalRequest, decision: str, comment: str) -> None:
    allowed = ALLOWED.get(approval.kind, set())
    if decision not in allowed:
        choices = ", ".join(Decision(d).label.lower() for d in sorted(allowed))
        raise ApprovalError(f"A {approval.get_kind_display().lower()} request can be decided "
                            f"with: {choices}.")
    if decision == Decision.ANSWER and not comment:
        raise ApprovalError("Write your guidance: it is what the run is told to do differently.")
    if decision == Decision.REQUEST_CHANGES and not comment:
        raise ApprovalError("Say which changes you want: your comment goes into the next prompt.")


def approval_vote_cast(*, approval: ApprovalRequest, user: User, decision: str,
                       comment: str = "", candidate: str,
                       dispatch: engine.Dispatch | None = engine.enqueue_step) -> VoteOutcome:
    """Record `user`'s decision on the candidate fingerprinted `candidate` (from the page the
    reviewer saw) and, when it settles the request, decide it through the engine.

    `dispatch` sends the run's next step (to the workers by default; None when the caller
    drives the run itself, as `manage.py approve` does)."""
    comment = comment.strip()
    _check_member(approval, user)
    _check_decision(approval, decision, comment)
    with transaction.atomic():
        locked = (ApprovalRequest.objects.select_for_update(of=("self",))
                  .select_related("project__team", "decided_by", "run").get(pk=approval.pk))
        _check_open(locked, candidate)
        vote, _ = ApprovalVote.objects.update_or_create(
            request=locked, user=user,
            defaults={"decision": decision, "comment": comment, "candidate": candidate})
        tally = approval_tally(locked, team=locked.project.team)
        settles = decision in CLOSING or tally.approvals >= tally.needed
        if settles:
            locked = _decide(locked, user=user, decision=decision, comment=comment,
                             dispatch=dispatch)
        _audit(locked, user=user, decision=decision, comment=comment, tally=tally,
               decided=settles)
    return VoteOutcome(approval=locked, vote=vote, tally=tally, decided=settles)


def _decide(locked: ApprovalRequest, *, user: User, decision: str,
            comment: str, dispatch: engine.Dispatch | None) -> ApprovalRequest:
    try:
        decided = engine.approval_decide(approval=locked, user=user, decision=decision,
                                         comment=_decision_comment(locked, decision, comment),
                                         dispatch=dispatch)
    except engine.ApprovalConflict as error:
        raise AlreadyDecided(str(error)) from error
    except engine.ApprovalInputError as error:
        raise ApprovalError(str(error)) from error
    notification_decision_send(approval=decided, actor=user)
    if decided.kind == ApprovalRequest.Kind.PUBLISH:
        # Imported here: the marketplace builds on these services.
        from marketplace.services import publish_approval_decided

        publish_approval_decided(approval=decided)
    return decided


def _decision_comment(approval: ApprovalRequest, decision: str, comment: str) -> str:
    """With several approvals, every approver's comment travels with the decision."""
    if decision != Decision.APPROVE:
        return comment
    notes = [f"{vote.user.get_username()}: {vote.comment}"
             for vote in approval_tally(approval, team=approval.project.team).votes
             if vote.decision == Decision.APPROVE and vote.comment]
    return "\n".join(notes) if len(notes) > 1 else comment


def _audit(approval: ApprovalRequest, *, user: User, decision: str, comment: str,
           tally: Tally, decided: bool) -> None:
    audit_record(
        actor=user, action=f"approval.{decision}", team=approval.project.team, target=approval,
        before={"status": ApprovalRequest.Status.PENDING},
        after={"status": approval.status if decided else ApprovalRequest.Status.PENDING,
               "kind": approval.kind, "iteration": approval.iteration, "comment": comment,
               "approvals": tally.approvals, "required": tally.needed,
               "project": approval.project.name, "run": approval.run_id})


def approvals_supersede(*, approval: ApprovalRequest) -> int:
    """A new request replaces the run's older pending ones: they become stale, so nobody
    approves a candidate the loop has already moved past. Returns how many were replaced."""
    older = (ApprovalRequest.objects.filter(run_id=approval.run_id,
                                            status=ApprovalRequest.Status.PENDING,
                                            created_at__lte=approval.created_at)
             .exclude(pk=approval.pk))
    replaced = 0
    for pk in older.values_list("pk", flat=True):
        # Guarded per row: one decided meanwhile keeps its decision.
        if ApprovalRequest.objects.filter(pk=pk, status=ApprovalRequest.Status.PENDING).update(
                status=ApprovalRequest.Status.STALE):
            replaced += 1
            audit_record(actor=None, action="approval.superseded", team=approval.project.team,
                         target_type="approvalrequest", target_id=str(pk),
                         target_repr=f"approval {pk} of run {approval.run_id}",
                         before={"status": "pending"},
                         after={"status": "stale", "replaced_by": approval.pk})
    return replaced
