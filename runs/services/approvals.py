"""Deciding approval requests the way trusted review systems do: one vote per reviewer; the
request is decided (runs.services.deciding.approval_decide) when a vote settles it.

The rules themselves (who may decide, what each decision does, stale candidates, N approvals,
which votes count) are in runs/approval_rules.py. Concurrent decisions are serialised on
the request's row, and approval_decide's guarded update makes exactly one of them the
decision; the run resumes as soon as the decision commits. The audit log, the notifications
and the marketplace's publish step answer the signals sent here (runs/signals.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction

from runs import approval_rules as rules
from runs import signals
from runs.approval_rules import AlreadyDecided, StaleCandidate, Tally, approval_tally
from runs.models import ApprovalRequest, ApprovalVote
from runs.services import deciding
from runs.services.outbox import Dispatch, enqueue_step

Decision = ApprovalVote.Decision
# Every refusal of the rules (who, what, stale, already decided) is one of these.
ApprovalError = rules.ApprovalRefused
__all__ = ["AlreadyDecided", "ApprovalError", "StaleCandidate", "VoteOutcome",
           "approval_vote_cast", "approvals_supersede"]


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


def approval_vote_cast(*, approval: ApprovalRequest, user: User, decision: str,
                       comment: str = "", candidate: str,
                       dispatch: Dispatch | None = enqueue_step) -> VoteOutcome:
    """Record `user`'s decision on the candidate fingerprinted `candidate` (from the page the
    reviewer saw) and, when it settles the request, decide it (the run moves on).

    `dispatch` sends the run's next step (to the workers by default; None when the caller
    drives the run itself, as `manage.py approve` does)."""
    comment = comment.strip()
    with transaction.atomic():
        locked = (ApprovalRequest.objects.select_for_update(of=("self",))
                  .select_related("project__team", "decided_by", "run").get(pk=approval.pk))
        rules.check_decision(locked, user=user, decision=decision, comment=comment,
                             candidate=candidate)
        vote, _ = ApprovalVote.objects.update_or_create(
            request=locked, user=user,
            defaults={"decision": decision, "comment": comment, "candidate": candidate})
        tally = approval_tally(locked, team=locked.project.team)
        settles = rules.settles(decision, tally)
        if settles:
            locked = _decide(locked, user=user, decision=decision, comment=comment,
                             dispatch=dispatch)
        signals.approval_voted.send(ApprovalVote, approval=locked, user=user, decision=decision,
                                    comment=comment, tally=tally, decided=settles)
    return VoteOutcome(approval=locked, vote=vote, tally=tally, decided=settles)


def _decide(locked: ApprovalRequest, *, user: User, decision: str,
            comment: str, dispatch: Dispatch | None) -> ApprovalRequest:
    # approval_decide applies the same rules again (it is a door of its own) and moves the run on.
    decided = deciding.approval_decide(approval=locked, user=user, decision=decision,
                                        comment=_decision_comment(locked, decision, comment),
                                        dispatch=dispatch)
    signals.approval_decided.send(ApprovalRequest, approval=decided, actor=user)
    return decided


def _decision_comment(approval: ApprovalRequest, decision: str, comment: str) -> str:
    """With several approvals, every approver's comment travels with the decision."""
    if decision != Decision.APPROVE:
        return comment
    notes = [f"{vote.user.get_username()}: {vote.comment}"
             for vote in approval_tally(approval, team=approval.project.team).votes
             if vote.decision == Decision.APPROVE and vote.comment]
    return "\n".join(notes) if len(notes) > 1 else comment


def approvals_supersede(*, approval: ApprovalRequest) -> int:
    """A new request replaces the run's older pending ones: they become stale, so nobody
    approves a candidate the loop has already moved past. Returns how many were replaced."""
    older = (ApprovalRequest.objects.filter(run_id=approval.run_id,
                                            status=ApprovalRequest.Status.PENDING,
                                            created_at__lte=approval.created_at)
             .exclude(pk=approval.pk))
    replaced: list[int] = []
    for pk in older.values_list("pk", flat=True):
        # Guarded per row: one decided meanwhile keeps its decision.
        if ApprovalRequest.objects.filter(pk=pk, status=ApprovalRequest.Status.PENDING).update(
                status=ApprovalRequest.Status.STALE):
            replaced.append(pk)
    if replaced:
        signals.approvals_superseded.send(ApprovalRequest, approval=approval, replaced=replaced)
    return len(replaced)
