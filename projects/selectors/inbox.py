"""The reviewer's inbox: everything that waits for a decision of theirs, oldest first, and its
count on every page: a run's gates (plan, change, escalation, publish request, from
runs/selectors/approvals.py) and what the apps above the portal add through the
"inbox_source" hook (autocoder/hooks.py; the marketplace: uploaded plugin versions,
marketplace/inbox.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.paginator import Page, Paginator
from django.db.models import CharField, QuerySet, Value
from django.urls import reverse

from autocoder import hooks
from autocoder.compiled_queries import count_rows
from runs.models import ApprovalRequest
from runs.selectors.approvals import approvals_awaiting
from teams.models import Membership

# The source of a run's gates; other sources are named by the apps that register them.
GATE = "gate"


def _inbox_rows(user: User | AnonymousUser,
                memberships: list[Membership] | None) -> QuerySet[Any]:
    """(created_at, pk, source) of everything waiting for the user, oldest first: one SQL
    statement, so counting it or reading a page of it is one query."""
    if user.is_authenticated and memberships is None:
        memberships = list(Membership.objects.filter(user=user).select_related("team"))

    def rows(queryset: QuerySet[Any], source: str) -> QuerySet[Any]:
        return (queryset.order_by().annotate(inbox=Value(source, output_field=CharField()))
                .values_list("created_at", "pk", "inbox"))

    others = [rows(source.awaiting(user, memberships), source.name)
              for source in hooks.get(INBOX_SOURCE)]
    gates = rows(approvals_awaiting(user, memberships), GATE)
    return gates.union(*others, all=True) if others else gates


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


INBOX_SOURCE = "inbox_source"


@dataclass(frozen=True)
class InboxSource:
    """What an app adds to the inbox (registered with hooks.register(INBOX_SOURCE, source)):
    `awaiting(user, memberships)` is a queryset of what waits for the user (with `created_at`
    and `pk`), `items(pks)` the inbox items of some of its rows by pk."""

    name: str
    awaiting: Callable[[User | AnonymousUser, list[Membership] | None], QuerySet[Any]]
    items: Callable[[list[int]], dict[int, InboxItem]]


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
    """The items of `rows` (created_at, pk, source), in their order: one query per source."""
    rows = list(rows)
    items_of: dict[str, Callable[[list[int]], dict[int, InboxItem]]] = {
        GATE: _gate_items, **{source.name: source.items for source in hooks.get(INBOX_SOURCE)}}
    found: dict[str, dict[int, InboxItem]] = {
        name: items([pk for _, pk, source in rows if source == name])
        for name, items in items_of.items()}
    return [found[source][pk] for _, pk, source in rows if pk in found.get(source, {})]


def _gate_items(pks: list[int]) -> dict[int, InboxItem]:
    return {approval.pk: _gate_item(approval) for approval in ApprovalRequest.objects
            .select_related("project__team", "project__requester").filter(pk__in=pks)}


def _gate_item(approval: ApprovalRequest) -> InboxItem:
    return InboxItem(
        what=f"{approval.get_kind_display()} request (attempt {approval.iteration})",
        subject=approval.project.name, team=approval.project.team.name,
        requested_by=approval.project.requester.get_username(),
        created_at=approval.created_at, url=reverse("approval_detail", args=[approval.pk]),
        source=GATE)
