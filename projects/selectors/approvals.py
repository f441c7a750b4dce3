"""Who may decide which approval request, and what is waiting for whom."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Exists, OuterRef, Q, QuerySet

from projects.models import (
    ApprovalRequest,
    ApprovalVote,
    Iteration,
    Membership,
    Project,
    Run,
    Team,
)


def is_author(user_id: int | None, *, project: Project, run: Run | None) -> bool:
    """Whoever asked for the project, and whoever started or retried the run: what they set
    going is their own change (as in trusted review systems)."""
    return user_id is not None and (project.requester_id == user_id
                                    or (run is not None and run.started_by_id == user_id))


def may_decide(*, membership: Membership, project: Project, team: Team, run: Run | None) -> bool:
    """Reviewers and admins decide; the author of the change (`is_author`) only where the team
    allows it, since an author does not approve their own change by default. `run` is the run
    whose gate it is (None: the project as a whole)."""
    if is_author(membership.user_id, project=project, run=run):
        return team.requester_may_approve
    return membership.can_review


def decidable_projects_q(*, membership: Membership, team: Team) -> Q | None:
    """A filter for the team's projects whose gates `membership` may decide (None: no project).
    Runs the member started are left out by `approvals_awaiting` (a gate is the run's)."""
    own = Q(requester_id=membership.user_id)
    if membership.can_review:
        return Q() if team.requester_may_approve else ~own
    return own if team.requester_may_approve else None


def started_gates_q(*, user_id: int | None) -> Q:
    """Approval requests of runs `user_id` started where the team does not let authors decide
    (for lists of what waits for someone; `may_decide` is the rule)."""
    return Q(run__started_by_id=user_id, project__team__requester_may_approve=False)


def _voted_by(user: User) -> Exists:
    return Exists(ApprovalVote.objects.filter(request=OuterRef("pk"), user=user))


def approvals_awaiting(user: User | AnonymousUser, memberships: list[Membership] | None = None
                       ) -> QuerySet[ApprovalRequest]:
    """Pending requests in all the user's teams that the user may decide and has not voted on
    (`memberships`: the user's, with their teams, when the caller has them already)."""
    if not user.is_authenticated:
        return ApprovalRequest.objects.none()
    if memberships is None:
        memberships = list(Membership.objects.filter(user=user).select_related("team"))
    scope = Q(pk__in=[])
    for membership in memberships:
        allowed = decidable_projects_q(membership=membership, team=membership.team)
        if allowed is not None:
            project_ids = Project.objects.filter(allowed, team=membership.team).values("pk")
            scope |= Q(project_id__in=project_ids)
    return (ApprovalRequest.objects.filter(scope, status=ApprovalRequest.Status.PENDING)
            .exclude(started_gates_q(user_id=user.pk)).exclude(_voted_by(user))
            .select_related("project__team", "project__requester", "run")
            .order_by("created_at"))


def approval_candidate(approval: ApprovalRequest) -> str:
    """A fingerprint of what is being decided: it changes when the loop replaces the candidate,
    so a decision made on an older page is refused instead of approving unseen code."""
    body = json.dumps([approval.pk, approval.iteration, approval.kind, approval.payload],
                      sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Tally:
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
        still = membership is not None and may_decide(
            membership=membership, project=approval.project, team=team, run=approval.run)
        (counted if still else lapsed).append(vote)
    approvals = sum(vote.decision == ApprovalVote.Decision.APPROVE for vote in counted)
    return Tally(approvals=approvals, needed=max(team.required_approvals, 1), votes=counted,
                 lapsed=lapsed)


@dataclass
class ReviewMaterial:
    """What a reviewer needs to decide: the candidate, what changed, tests, findings."""

    iteration: Iteration | None
    against: Iteration | None
    test_report: dict[str, Any]
    safety_report: dict[str, Any]
    snippets: list[dict[str, Any]]


def review_material(approval: ApprovalRequest, *, against: int | None = None) -> ReviewMaterial:
    """The iteration the request is about and the one to compare it with (by default: the one
    before for changes and escalations, nothing for a publish request - the whole plugin)."""
    payload = approval.payload or {}
    iteration = None
    if approval.kind != ApprovalRequest.Kind.PLAN:
        iteration = Iteration.objects.filter(run_id=approval.run_id,
                                             number=approval.iteration).first()
    if against is None:
        against = 0 if approval.kind == ApprovalRequest.Kind.PUBLISH else approval.iteration - 1
    previous = (Iteration.objects.filter(run_id=approval.run_id, number=against).first()
                if iteration is not None and against > 0 else None)
    tests = payload.get("test_report") or (iteration.test_report if iteration else {}) or {}
    safety = payload.get("safety") or (iteration.safety_report if iteration else {}) or {}
    files = iteration.files if iteration else {}
    return ReviewMaterial(iteration=iteration, against=previous, test_report=tests,
                          safety_report=safety, snippets=finding_snippets(safety, files))


def finding_snippets(safety_report: dict[str, Any], files: dict[str, str],
                     context: int = 2) -> list[dict[str, Any]]:
    """Each finding with the lines around it, its own line marked."""
    snippets = []
    for finding in safety_report.get("findings") or []:
        lines = (files.get(finding.get("file") or "") or "").splitlines()
        line = int(finding.get("line") or 0)
        start, end = max(line - context, 1), min(line + context, len(lines))
        snippets.append({**finding, "lines": [
            {"number": n, "text": lines[n - 1], "flagged": n == line}
            for n in range(start, end + 1)] if line and lines else []})
    return snippets
