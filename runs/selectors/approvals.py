"""Which approval requests wait for whom, and what a reviewer sees of one.

Who may decide is a rule of runs/approval_rules.py. The reviewer's inbox, which adds the plugin
versions uploaded to the marketplace, is the portal's (projects/selectors/inbox.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict, cast

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Exists, OuterRef, Q, QuerySet

from autocoder.engine.pending import SafetyFinding, SafetyReport
from runs.approval_rules import awaiting_member_q
from runs.models import ApprovalRequest, ApprovalVote, Iteration
from runs.selectors.baselines import Baseline, baseline_for, gate_default
from teams.models import Membership


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
        allowed = awaiting_member_q(membership=membership, team=membership.team)
        if allowed is not None:
            scope |= allowed
    return (ApprovalRequest.objects.filter(scope, status=ApprovalRequest.Status.PENDING)
            .exclude(_voted_by(user))
            .select_related("project__team", "project__requester", "run")
            .order_by("created_at"))


def who_decides(*, deciders: list[User], team_name: str, thing: str, viewer_id: int | None,
                author: User | None) -> str:
    """The plain line shown instead of decision buttons to someone who may not decide: who can
    (`deciders`, from the approval rules) and who hears about the decision (`author`)."""
    names = [user.get_username() for user in deciders]
    if not names:
        line = (f"Nobody in {team_name} can decide this {thing} yet: a team admin can give "
                "someone the reviewer role on the team's page.")
    elif len(names) == 1:
        line = f"{names[0]} can decide this {thing}."
    else:
        line = f"{', '.join(names[:-1])} or {names[-1]} can decide this {thing}."
    if author is not None and author.pk == viewer_id:
        return f"{line} You will get a notification when it is decided."
    if author is not None:
        return f"{line} {author.get_username()} gets a notification when it is decided."
    return line


class SnippetLine(TypedDict):
    number: int
    text: str
    flagged: bool  # the finding's own line


class Snippet(SafetyFinding, total=False):
    lines: list[SnippetLine]


@dataclass
class ReviewMaterial:
    """What a reviewer needs to decide: the candidate, what changed, tests, findings."""

    iteration: Iteration | None
    against: Baseline | None  # what the candidate's code is compared with (None: nothing)
    test_report: dict[str, Any]
    safety_report: SafetyReport
    snippets: list[Snippet]
    quality: dict[str, Any]  # the quality pipeline's stages and score ({} before it ran)


def review_material(approval: ApprovalRequest, *, against: str | None = None) -> ReviewMaterial:
    """The iteration the request is about and what to compare it with (`against`: an
    attempt's number, "version" or "0"; by default runs/selectors/baselines.py gate_default:
    the version in use for a change run, the attempt before for a new plugin's changes and
    escalations, nothing for its publish request - the whole plugin)."""
    payload = approval.payload or {}
    iteration = None
    if approval.kind != ApprovalRequest.Kind.PLAN:
        iteration = Iteration.objects.filter(run_id=approval.run_id,
                                             number=approval.iteration).first()
    previous = (baseline_for(approval.run, against, current=approval.iteration,
                             default=gate_default(approval, approval.run))
                if iteration is not None else None)
    tests = payload.get("test_report") or (iteration.test_report if iteration else {}) or {}
    safety = cast("SafetyReport", payload.get("safety")
                  or (iteration.safety_report if iteration else {}) or {})
    files = iteration.files if iteration else {}
    quality = payload.get("quality") or (iteration.quality if iteration else {}) or {}
    return ReviewMaterial(iteration=iteration, against=previous, test_report=tests,
                          safety_report=safety, snippets=finding_snippets(safety, files),
                          quality=quality)


def finding_snippets(safety_report: SafetyReport, files: dict[str, str],
                     context: int = 2) -> list[Snippet]:
    """Each finding with the lines around it, its own line marked."""
    snippets: list[Snippet] = []
    for finding in safety_report.get("findings") or []:
        lines = (files.get(finding.get("file") or "") or "").splitlines()
        line = int(finding.get("line") or 0)
        start, end = max(line - context, 1), min(line + context, len(lines))
        snippets.append({**finding, "lines": [
            {"number": n, "text": lines[n - 1], "flagged": n == line}
            for n in range(start, end + 1)] if line and lines else []})
    return snippets
