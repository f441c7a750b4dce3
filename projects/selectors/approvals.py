"""What is waiting for whom, and what a reviewer sees of an approval request.

The reviewer's inbox holds everything that waits for a decision of theirs: a run's gates (plan,
change, escalation, publish request) and plugin versions uploaded to the marketplace. Who may
decide is a rule of projects/approval_rules.py; the name re-exported below is imported from
here by the tests."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.paginator import Page, Paginator
from django.db.models import CharField, Exists, OuterRef, Q, QuerySet, Value
from django.urls import reverse

from autocoder.compiled_queries import count_rows
from projects.approval_rules import approval_candidate as approval_candidate
from projects.approval_rules import decidable_projects_q, decidable_uploads_q, started_gates_q
from projects.models import ApprovalRequest, ApprovalVote, Iteration, Membership, Project

if TYPE_CHECKING:
    from marketplace.models import PluginVersion


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


def uploads_awaiting(user: User | AnonymousUser, memberships: list[Membership] | None = None
                     ) -> QuerySet[PluginVersion]:
    """Plugin versions uploaded to the marketplace (or sent from the command line) that wait
    at the publish gate in the user's teams, that the user may decide (`upload_refusal`) and
    see, and has not voted on. A run's version is left out: its gate is the run's publish
    request, which `approvals_awaiting` lists."""
    # Imported here: the marketplace builds on the projects app.
    from marketplace.models import PluginVersion, VersionDecision
    from marketplace.selectors.visibility import viewer_of, visible_q

    if not user.is_authenticated:
        return PluginVersion.objects.none()
    if memberships is None:
        memberships = list(Membership.objects.filter(user=user).select_related("team"))
    scope = Q(pk__in=[])
    for membership in memberships:
        allowed = decidable_uploads_q(membership=membership, team=membership.team)
        if allowed is not None:
            scope |= allowed & Q(plugin__team_id=membership.team_id)
    voted = Exists(VersionDecision.objects.filter(version=OuterRef("pk"), user_id=user.pk))
    return (PluginVersion.objects
            .filter(scope, visible_q(viewer_of(user.pk, memberships), "plugin__"),
                    status=PluginVersion.Status.PENDING, approval__isnull=True)
            .exclude(voted).select_related("plugin__team", "submitted_by").defer("files")
            .order_by("created_at"))


# Which table a row of the inbox comes from.
GATE, UPLOAD = "gate", "upload"


def _inbox_rows(user: User | AnonymousUser,
                memberships: list[Membership] | None) -> QuerySet[Any]:
    """(created_at, pk, source) of everything waiting for the user, oldest first: one SQL
    statement, so counting it or reading a page of it is one query."""
    if user.is_authenticated and memberships is None:
        memberships = list(Membership.objects.filter(user=user).select_related("team"))

    def rows(queryset: QuerySet[Any], source: str) -> QuerySet[Any]:
        return (queryset.order_by().annotate(inbox=Value(source, output_field=CharField()))
                .values_list("created_at", "pk", "inbox"))

    return rows(approvals_awaiting(user, memberships), GATE).union(
        rows(uploads_awaiting(user, memberships), UPLOAD), all=True)


def inbox_count(user: User | AnonymousUser, memberships: list[Membership] | None = None) -> int:
    """How many things wait for the user's decision (the Reviews count): one query, compiled
    once per user and shape of their memberships (it is on every page)."""
    if not user.is_authenticated:
        return 0
    if memberships is None:
        memberships = list(Membership.objects.filter(user=user).select_related("team"))
    key = ("inbox", user.pk, membership_shape(memberships))
    return count_rows(key, lambda: _inbox_rows(user, memberships))


def membership_shape(memberships: Iterable[Membership]) -> tuple[tuple[int, str, bool], ...]:
    """Everything of the user's memberships the inbox query is built from: the teams, the role
    in each (who may decide) and whether the team lets requesters decide."""
    return tuple(sorted((m.team_id, m.role, m.team.requester_may_approve) for m in memberships))


@dataclass(frozen=True)
class InboxItem:
    """One thing waiting for a reviewer, whatever its kind, and where it is decided."""

    what: str
    subject: str
    team: str
    requested_by: str
    created_at: datetime
    url: str
    source: str


def inbox_page(user: User | AnonymousUser, number: Any = 1, *, per_page: int = 25,
               memberships: list[Membership] | None = None) -> Page[InboxItem]:
    """A page of the user's inbox, oldest first (the longest wait is at the top)."""
    rows = _inbox_rows(user, memberships).order_by("created_at", "pk")
    page = Paginator(rows, per_page).get_page(number)
    page.object_list = inbox_items(list(page.object_list))
    return page


def inbox_items(rows: Iterable[tuple[datetime, int, str]]) -> list[InboxItem]:
    from marketplace.models import PluginVersion

    rows = list(rows)
    gates = {a.pk: a for a in ApprovalRequest.objects.select_related(
        "project__team", "project__requester").filter(
        pk__in=[pk for _, pk, source in rows if source == GATE])}
    uploads = {v.pk: v for v in PluginVersion.objects.select_related(
        "plugin__team", "submitted_by").defer("files").filter(
        pk__in=[pk for _, pk, source in rows if source == UPLOAD])}
    items = []
    for _, pk, source in rows:
        if source == GATE and pk in gates:
            items.append(_gate_item(gates[pk]))
        elif source == UPLOAD and pk in uploads:
            items.append(upload_item(uploads[pk]))
    return items


def _gate_item(approval: ApprovalRequest) -> InboxItem:
    return InboxItem(
        what=f"{approval.get_kind_display()} request (iteration {approval.iteration})",
        subject=approval.project.name, team=approval.project.team.name,
        requested_by=approval.project.requester.get_username(),
        created_at=approval.created_at, url=reverse("approval_detail", args=[approval.pk]),
        source=GATE)


def upload_item(version: PluginVersion) -> InboxItem:
    """An uploaded version as the inbox shows it; its decision is taken on its own page."""
    return InboxItem(
        what=f"Uploaded version {version.version}", subject=version.plugin.name,
        team=version.plugin.team.name,
        requested_by=version.submitted_by.get_username() if version.submitted_by else "",
        created_at=version.created_at, url=upload_url(version), source=UPLOAD)


def upload_url(version: PluginVersion) -> str:
    """Where an uploaded version is decided: its page, at its decision (the anchor also keeps
    a re-upload of a rejected number apart from the first one)."""
    page = reverse("marketplace:version", args=[version.plugin.normalized_name, version.version])
    return f"{page}#gate-{version.pk}"


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
