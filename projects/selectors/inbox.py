"""The reviewer's inbox: everything that waits for a decision of theirs, a run's gates (plan,
change, escalation, publish request, from runs/selectors/approvals.py) and plugin versions
uploaded to the marketplace, oldest first, and its count on every page."""

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
from projects.models import Membership
from runs.approval_rules import decidable_uploads_q
from runs.models import ApprovalRequest
from runs.selectors.approvals import approvals_awaiting

if TYPE_CHECKING:
    from marketplace.models import PluginVersion


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
