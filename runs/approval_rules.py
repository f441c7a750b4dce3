"""The approval rules, written once: who may decide a gate, what each decision does, when a
candidate is stale, how many approvals a gate needs and which votes count.

Every door uses these functions and nothing else: the review pages (projects/views/approvals.py
and the listings in runs/selectors/approvals.py and projects/selectors/inbox.py), `manage.py
approve`, `approval_decide` (runs/services/deciding.py), the marketplace (a generated
version's publish request and an uploaded version's gate) and the tools app's activations
(`activation_refusal`). A refusal is always an `ApprovalRefused` whose message says why in
plain words, the same whichever door the decision came through. The intended rules are
described for operators in docs/operating.md ("Approval gates").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db.models import Q

from runs.models import ApprovalRequest, ApprovalVote, Iteration, Project, Run
from teams.models import Membership, Team

Decision = ApprovalVote.Decision
Kind = ApprovalRequest.Kind
Status = ApprovalRequest.Status


# -- the one refusal -----------------------------------------------------------------------------


class ApprovalRefused(PermissionDenied):
    """A decision the approval rules do not allow; `str()` is the plain-words reason.

    A PermissionDenied, so a door that does not handle it answers 403. The subclasses only say
    which rule refused, for doors that answer differently (the review page keeps what the
    reviewer typed on a stale candidate, the marketplace reports a conflict)."""


class MayNotDecide(ApprovalRefused):
    """This person may not decide this gate (see `refusal_to_decide`)."""


class DecisionNotAccepted(ApprovalRefused):
    """The decision does not fit the request (see `decision_status`)."""


class StaleCandidate(ApprovalRefused):
    """What the decider looked at is no longer what would be decided (see `check_open`)."""


class AlreadyDecided(ApprovalRefused):
    """Somebody else's decision closed the request first."""


class NotEnoughApprovals(ApprovalRefused):
    """An approval that would open a gate needing more approvals than it has."""


# -- who may decide ------------------------------------------------------------------------------


def gate_authorship(user_id: int | None, *, project: Project, run: Run | None) -> str:
    """How `user_id` is the author of a gate's change, in words ("" when they are not).

    Whoever asked for the project and whoever started or retried the run both count: what
    they set going is their own change, as in trusted review systems."""
    if user_id is None:
        return ""
    if project.requester_id == user_id:
        return "You asked for this project"
    if run is not None and run.started_by_id == user_id:
        return "You started or retried this run"
    return ""


def refusal_to_decide(*, membership: Membership | None, team: Team, authorship: str) -> str:
    """Why this member may not decide ("" when they may); `authorship` from `gate_authorship`
    (or the marketplace's "You submitted this version").

    The author of a change does not approve it (alone or as one of N) unless the team lets
    requesters approve their own work (small teams, a solo founder); everyone else needs the
    reviewer or admin role. Site staff (`is_staff`) get no say from that alone: a gate is the
    team's decision, and staff who are members decide by their role like anyone else."""
    if membership is None:
        return f"Only members of {team.name} decide its approval requests."
    if authorship:
        if team.requester_may_approve:
            return ""
        return (f"{authorship}: {team.name} does not let the author of a change decide it, "
                "so another reviewer has to.")
    if not membership.can_review:
        return f"Only reviewers and admins of {team.name} decide approval requests."
    return ""


BUDGET_ADMINS_ONLY = "Only admins of {team} decide whether a run may spend more."


def budget_refusal(*, membership: Membership | None, team: Team) -> str:
    """Why this member may not decide a budget request of `team` ("" when they may).

    Spending more is the team's money, not a review of code: its admins decide, whoever
    started the run (a solo founder is admin and requester at once), and one admin's
    decision is enough (`approvals_needed_for`)."""
    if membership is None:
        return f"Only members of {team.name} decide its approval requests."
    if not membership.is_admin:
        return BUDGET_ADMINS_ONLY.format(team=team.name)
    return ""


def gate_refusal(*, membership: Membership | None, approval: ApprovalRequest) -> str:
    """`refusal_to_decide` for one approval request ("" when the member may decide it); a
    budget request follows `budget_refusal`."""
    if approval.kind == Kind.BUDGET:
        return budget_refusal(membership=membership, team=approval.project.team)
    user_id = membership.user_id if membership is not None else None
    return refusal_to_decide(membership=membership, team=approval.project.team,
                             authorship=gate_authorship(user_id, project=approval.project,
                                                        run=approval.run))


def check_may_decide(approval: ApprovalRequest, user: User) -> Membership:
    """The user's membership when they may decide `approval`; MayNotDecide otherwise."""
    membership = Membership.objects.filter(team_id=approval.project.team_id, user=user).first()
    refusal = gate_refusal(membership=membership, approval=approval)
    if refusal or membership is None:
        raise MayNotDecide(refusal)
    return membership


def gate_deciders(approval: ApprovalRequest) -> list[User]:
    """Everyone `gate_refusal` lets decide `approval`, by name (whom to notify, whom to name
    to someone who may not decide it)."""
    memberships = (Membership.objects.filter(team_id=approval.project.team_id)
                   .select_related("user").order_by("user__username"))
    return [m.user for m in memberships if not gate_refusal(membership=m, approval=approval)]


UPLOAD_AUTHORSHIP = "You submitted this version"


def upload_refusal(*, membership: Membership | None, team: Team,
                   submitted_by_id: int | None) -> str:
    """`refusal_to_decide` for a version uploaded to the marketplace (or published from the
    command line): whoever submitted it is the author of the change."""
    own = membership is not None and submitted_by_id == membership.user_id
    return refusal_to_decide(membership=membership, team=team,
                             authorship=UPLOAD_AUTHORSHIP if own else "")


def upload_deciders(*, team: Team, submitted_by_id: int | None) -> list[User]:
    """Everyone `upload_refusal` lets decide an uploaded version of `team`, by name."""
    memberships = (Membership.objects.filter(team=team).select_related("user")
                   .order_by("user__username"))
    return [m.user for m in memberships
            if not upload_refusal(membership=m, team=team, submitted_by_id=submitted_by_id)]


ACTIVATION_ADMINS_ONLY = "Only admins of {team} activate plugins as tools."


def activation_refusal(*, membership: Membership | None, team: Team) -> str:
    """Why this member may not decide a tool activation of `team` ("" when they may).

    Only the team's admins: activating puts a published (already reviewed) version to work
    with the team's settings, secrets and data. An admin who asked for it decides it too (a
    team admin activating a tool is the normal case), and one admin's decision is enough."""
    if membership is None:
        return f"Only members of {team.name} decide what it activates."
    if not membership.is_admin:
        return ACTIVATION_ADMINS_ONLY.format(team=team.name)
    return ""


def activation_deciders(*, team: Team) -> list[User]:
    """Everyone `activation_refusal` lets decide an activation of `team`, by name."""
    memberships = (Membership.objects.filter(team=team).select_related("user")
                   .order_by("user__username"))
    return [m.user for m in memberships if not activation_refusal(membership=m, team=team)]


def _decidable_q(*, membership: Membership, team: Team, own: Q) -> Q | None:
    # `refusal_to_decide` as a filter; `own`: the member is the change's author.
    if membership.can_review:
        return Q() if team.requester_may_approve else ~own
    return own if team.requester_may_approve else None


def decidable_projects_q(*, membership: Membership, team: Team) -> Q | None:
    """`refusal_to_decide` as a filter of the team's projects (None: no project), for lists of what
    waits for someone. Runs the member started are left out with `started_gates_q`."""
    return _decidable_q(membership=membership, team=team,
                        own=Q(requester_id=membership.user_id))


def decidable_uploads_q(*, membership: Membership, team: Team) -> Q | None:
    """`upload_refusal` as a filter of the team's marketplace versions (None: no version)."""
    return _decidable_q(membership=membership, team=team,
                        own=Q(submitted_by_id=membership.user_id))


def started_gates_q(*, user_id: int | None) -> Q:
    """Approval requests of runs `user_id` started, where the team does not let authors decide
    (to leave out of lists of what waits for them: `gate_authorship` makes them its authors)."""
    return Q(run__started_by_id=user_id, project__team__requester_may_approve=False)


def awaiting_member_q(*, membership: Membership, team: Team) -> Q | None:
    """`gate_refusal` as a filter of `team`'s approval requests (None: none), for lists of
    what waits for someone: the gates of code by `decidable_projects_q` and `started_gates_q`,
    budget requests by `budget_refusal`."""
    code: Q | None = None
    decidable = decidable_projects_q(membership=membership, team=team)
    if decidable is not None:
        code = (Q(project_id__in=Project.objects.filter(decidable, team=team).values("pk"))
                & ~Q(kind=Kind.BUDGET) & ~started_gates_q(user_id=membership.user_id))
    if budget_refusal(membership=membership, team=team):
        return code
    money = Q(kind=Kind.BUDGET, project__team=team)
    return money if code is None else code | money


# -- what each decision does ---------------------------------------------------------------------


# The one table: the decisions each kind of request accepts and the status each leads to.
OUTCOMES: dict[str, dict[str, str]] = {
    Kind.PLAN: {Decision.APPROVE: Status.APPROVED, Decision.REJECT: Status.REJECTED,
                Decision.REQUEST_CHANGES: Status.CHANGES_REQUESTED},
    Kind.CHANGE: {Decision.APPROVE: Status.APPROVED, Decision.REJECT: Status.REJECTED,
                  Decision.REQUEST_CHANGES: Status.CHANGES_REQUESTED},
    Kind.ESCALATION: {Decision.ANSWER: Status.ANSWERED, Decision.REJECT: Status.REJECTED},
    Kind.PUBLISH: {Decision.APPROVE: Status.APPROVED, Decision.REJECT: Status.REJECTED},
    # Approve: continue with the amount the request names; reject: stop the run.
    Kind.BUDGET: {Decision.APPROVE: Status.APPROVED, Decision.REJECT: Status.REJECTED},
}
# Decisions that end the request at once, whatever the other reviewers think.
CLOSING = frozenset({Decision.REJECT, Decision.REQUEST_CHANGES, Decision.ANSWER})


def decisions_allowed(kind: str) -> list[Decision]:
    """The decisions a request of `kind` accepts (from OUTCOMES)."""
    return [Decision(d) for d in OUTCOMES.get(kind, {})]


def decision_status(kind: str, decision: str, comment: str) -> str:
    """The status `decision` gives a request of `kind`; DecisionNotAccepted when it does not
    fit. Guidance and requested changes go to the model, so they need words."""
    outcomes = OUTCOMES.get(kind, {})
    if decision not in outcomes:
        choices = ", ".join(Decision(d).label.lower() for d in sorted(outcomes))
        allowed = f"a {Kind(kind).label.lower()} request can be decided with: {choices}."
        if decision not in Decision.values:
            raise DecisionNotAccepted(f"Unknown decision {decision!r}: {allowed}")
        if decision == Decision.ANSWER:
            raise DecisionNotAccepted(f"Only escalations are answered: {allowed}")
        hint = (" To change the plugin, reject it and start a new run."
                if kind == Kind.PUBLISH and decision == Decision.REQUEST_CHANGES else "")
        raise DecisionNotAccepted(f"{allowed[0].upper()}{allowed[1:]}{hint}")
    if decision == Decision.ANSWER and not comment.strip():
        raise DecisionNotAccepted("Write your guidance: it is what the run is told to do "
                                  "differently.")
    if decision == Decision.REQUEST_CHANGES and not comment.strip():
        raise DecisionNotAccepted("Say which changes you want: your comment goes into the next "
                                  "prompt.")
    return outcomes[decision]


# -- stale candidates ----------------------------------------------------------------------------


def approval_candidate(approval: ApprovalRequest) -> str:
    """A fingerprint of what is being decided: it changes when the loop replaces the candidate,
    so a decision made on an older page is refused instead of approving unseen code."""
    body = json.dumps([approval.pk, approval.iteration, approval.kind, approval.payload],
                      sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def newer_iteration_exists(approval: ApprovalRequest) -> bool:
    """A change or publish request is about one iteration's code: once the loop has written a
    later iteration, deciding on the older one would approve code that is no longer current."""
    if approval.kind not in (Kind.CHANGE, Kind.PUBLISH):
        return False
    return Iteration.objects.filter(run_id=approval.run_id, number__gt=approval.iteration).exists()


def already_decided_message(approval: ApprovalRequest) -> str:
    """Who closed the request, for the one whose decision came second."""
    who = approval.decided_by.get_username() if approval.decided_by else "someone"
    return (f"This request was already decided ({approval.get_status_display().lower()}) "
            f"by {who}.")


def check_open(approval: ApprovalRequest, *, candidate: str) -> None:
    """The request (as read now, locked) still waits, for exactly the candidate the decider
    saw (`candidate`, from `approval_candidate`): StaleCandidate or AlreadyDecided otherwise."""
    if approval.status == Status.STALE:
        raise StaleCandidate("This request is no longer open: a newer request replaced it, or "
                             "the run moved on or ended. Nothing was decided; review the run's "
                             "current request instead.")
    if approval.status != Status.PENDING:
        raise AlreadyDecided(already_decided_message(approval))
    if candidate != approval_candidate(approval) or newer_iteration_exists(approval):
        raise StaleCandidate("The candidate changed since you opened this page, so your decision "
                             "was not saved. Review the current version and send it again.")


# -- N approvals ---------------------------------------------------------------------------------


def approvals_needed(team: Team) -> int:
    """How many approvals open a gate of `team`: at least one whatever the setting, so no
    setting opens a gate nobody approved."""
    return max(team.required_approvals, 1)


def approvals_needed_for(approval: ApprovalRequest, *, team: Team) -> int:
    """`approvals_needed` for one request: a budget request needs one admin's (the team's
    number of approvals is about reviewing code)."""
    return 1 if approval.kind == Kind.BUDGET else approvals_needed(team)


@dataclass(frozen=True)
class Tally:
    """What a gate's votes add up to now (see `approval_tally`)."""

    approvals: int
    needed: int
    votes: list[ApprovalVote]
    # Votes of people who may no longer decide (left the team, lost the role): kept, not counted.
    lapsed: list[ApprovalVote] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return max(self.needed - self.approvals, 0)


def approval_tally(approval: ApprovalRequest, *, team: Team) -> Tally:
    """The votes that count now: on the current candidate (votes on a replaced candidate no
    longer count), by people who may still decide it (checked again at every tally)."""
    candidate = approval_candidate(approval)
    votes = list(approval.votes.select_related("user").filter(candidate=candidate))
    memberships = {m.user_id: m for m in Membership.objects.filter(
        team=team, user_id__in=[vote.user_id for vote in votes])}
    counted: list[ApprovalVote] = []
    lapsed: list[ApprovalVote] = []
    for vote in votes:
        membership = memberships.get(vote.user_id)
        still = membership is not None and not gate_refusal(membership=membership,
                                                            approval=approval)
        (counted if still else lapsed).append(vote)
    approvals = sum(vote.decision == Decision.APPROVE for vote in counted)
    return Tally(approvals=approvals, needed=approvals_needed_for(approval, team=team),
                 votes=counted, lapsed=lapsed)


def settles(decision: str, tally: Tally) -> bool:
    """Whether a vote closes the request: a closing decision at once, an approval once the
    approvals that count reach the team's number."""
    return decision in CLOSING or tally.approvals >= tally.needed


def check_enough_approvals(approval: ApprovalRequest, *, user: User, decision: str) -> None:
    """A decision made directly (without a recorded vote) counts as the decider's own vote:
    NotEnoughApprovals when, even so, an approval leaves the gate short of the team's number,
    so no door opens a gate with fewer approvals than the review pages would."""
    if decision in CLOSING:
        return
    tally = approval_tally(approval, team=approval.project.team)
    voted = any(v.user_id == user.pk and v.decision == Decision.APPROVE for v in tally.votes)
    have = tally.approvals + (0 if voted else 1)
    if have < tally.needed:
        raise NotEnoughApprovals(f"This gate needs {tally.needed} approvals and would have {have}"
                                 " with yours: record your vote (on the review page or with"
                                 " manage.py approve) so others can add theirs.")


# -- every rule, in the order every door applies them --------------------------------------------


def check_decision(approval: ApprovalRequest, *, user: User, decision: str, comment: str,
                   candidate: str) -> str:
    """Who may decide, what the decision does, whether the candidate is current - in that
    order, so the same refused decision gets the same answer at every door. `approval` is the
    request as read now (locked by the caller). Returns the status the decision leads to."""
    check_may_decide(approval, user)
    status = decision_status(approval.kind, decision, comment)
    check_open(approval, candidate=candidate)
    return status
