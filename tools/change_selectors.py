"""Reads of change requests ("Ask for a change", tools/services/changes.py): who may ask about
a plugin and from which team, which call may be attached and how much of it, who sees a
request, and what waits for the owning team (its Reviews inbox, tools/inbox.py).

Who sees what follows the marketplace (marketplace/selectors/visibility.py): a plugin the
person may not see does not exist here (404). The owning team's members see a request whole;
the asker and their team see their own request (its words, its cases, its status), never the
owner's code or run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q, QuerySet
from django.http import Http404
from packaging.version import InvalidVersion, Version

from marketplace.models import Plugin, PluginVersion
from marketplace.selectors.visibility import can_see, plugin_for_viewer, viewer_for
from runs.approval_rules import refusal_to_decide
from runs.models import Run
from teams.models import Membership, Team
from tools.models import Activation, ChangeRequest, Invocation

User = AbstractBaseUser | AnonymousUser


def plugin_for_asking(user: User, name: str) -> Plugin:
    """The published plugin `name` if the user sees it (marketplace rules), or 404."""
    plugin = plugin_for_viewer(viewer_for(user), name)
    if plugin is None or plugin.latest_version_id is None:
        raise Http404("No such plugin")
    return plugin


def asking_teams(user: User, plugin: Plugin) -> list[Team]:
    """The user's teams a request about `plugin` may come from: the owning team (when the
    user sees the plugin, which the caller checked), and any of their teams for a public one."""
    if not user.is_authenticated:
        return []
    memberships = (Membership.objects.filter(user_id=user.pk).select_related("team")
                   .order_by("team__name"))
    return [m.team for m in memberships
            if m.team_id == plugin.team_id or plugin.visibility == Plugin.Visibility.PUBLIC]


def version_in_use(team: Team, plugin: Plugin, asked: str = "") -> PluginVersion:
    """The version the request is about: the one asked for (published), else the one the
    team uses, else the newest published one."""
    versions = PluginVersion.objects.filter(plugin=plugin, status=PluginVersion.Status.PUBLISHED)
    if asked:
        found = versions.filter(version=asked).first()
        if found is not None:
            return found
    activation = (Activation.objects.select_related("version")
                  .filter(team=team, plugin=plugin, status=Activation.Status.ACTIVE).first())
    if activation is not None:
        return activation.version
    latest = versions.filter(pk=plugin.latest_version_id or 0).first()
    if latest is None:
        raise Http404("No published version")
    return latest


@dataclass(frozen=True)
class CallCase:
    """What a call brings to a request: its command, input and answer, as far as the asker
    may read them (`whole`: their own form result, or a schedule's call, as the result page
    shows them; otherwise what the log shows, the error's words)."""

    invocation: Invocation
    whole: bool
    input: Any
    got: Any
    failed: bool


def call_case(team: Team, plugin: Plugin, pk: int, user_id: int) -> CallCase:
    """Call `pk` of the team's log of `plugin`, or 404."""
    found = (Invocation.objects.select_related("version", "schedule")
             .filter(team=team, plugin=plugin, pk=pk)
             .exclude(caller=Invocation.Caller.EVENT).first())
    if found is None:
        raise Http404("No such call")
    own = found.caller == Invocation.Caller.USER and found.user_id == user_id
    scheduled = found.caller == Invocation.Caller.SCHEDULE
    whole = own or scheduled
    failed = found.status != Invocation.Status.OK
    if scheduled and found.schedule is not None:
        given: Any = found.schedule.payload
    else:
        given = found.payload if own else {}
    if failed:
        got: Any = found.error or found.get_status_display()
    else:
        got = found.output if whole and not found.output_cut else None
    return CallCase(invocation=found, whole=whole, input=given, got=got, failed=failed)


def may_decide_change(user: User, request: ChangeRequest) -> str:
    """Why the user may not start or decline `request` ("" when they may): reviewers and
    admins of the owning team (runs/approval_rules.py's words)."""
    membership = (Membership.objects.filter(team_id=request.team_id, user_id=user.pk).first()
                  if user.is_authenticated else None)
    return refusal_to_decide(membership=membership, team=request.team, authorship="")


def change_request_for_viewer(user: User, pk: int) -> tuple[ChangeRequest, bool]:
    """Request `pk` and whether the user sees it as the owning team does (True) or as its
    asker's side (False: the asker or their team); 404 for anyone else."""
    request = (ChangeRequest.objects.select_related(
        "team", "plugin", "version", "asked_by", "from_team", "decided_by", "project")
        .filter(pk=pk).first())
    if request is None or not user.is_authenticated:
        raise Http404("No such change request")
    teams = set(Membership.objects.filter(user_id=user.pk).values_list("team_id", flat=True))
    if request.team_id in teams and can_see(viewer_for(user), request.plugin):
        return request, True
    if request.asked_by_id == user.pk or request.from_team_id in teams:
        return request, False
    raise Http404("No such change request")


def team_change_requests(team: Team, user: User) -> dict[str, list[ChangeRequest]]:
    """The team's requests: "asked" (by its members, of any plugin) and "received" (about
    its plugins the user sees), newest first."""
    base = ChangeRequest.objects.select_related("plugin", "version", "asked_by", "from_team",
                                                "team")
    viewer = viewer_for(user)
    received = [r for r in base.filter(team=team)[:100] if can_see(viewer, r.plugin)]
    asked = list(base.filter(from_team=team).exclude(team=team)[:100])
    return {"asked": asked, "received": received}


def plugin_change_requests(team: Team, plugin: Plugin) -> QuerySet[ChangeRequest]:
    """What the team asked about `plugin` (or, for its own plugin, everything asked of it)."""
    scope = Q(from_team=team) | Q(team=team)
    return (ChangeRequest.objects.select_related("asked_by", "version")
            .filter(scope, plugin=plugin).order_by("-created_at", "-id"))


def changes_awaiting(user: User, memberships: list[Membership] | None = None
                     ) -> QuerySet[ChangeRequest]:
    """Open requests about plugins of the teams where the user may start or decline them
    (reviewers and admins), that they see. Built from the memberships only (the inbox count
    compiles it once per membership shape)."""
    if not user.is_authenticated:
        return ChangeRequest.objects.none()
    if memberships is None:
        memberships = list(Membership.objects.filter(user_id=user.pk).select_related("team"))
    # A reviewer or admin of the owning team sees its plugins, private ones too.
    teams = sorted(m.team_id for m in memberships if m.can_review)
    return (ChangeRequest.objects.filter(team_id__in=teams, status=ChangeRequest.Status.OPEN)
            .order_by("created_at"))


@dataclass(frozen=True)
class Shipped:
    """Where a shipped change stands for the team that asked: the version it came out in
    (None when it cannot be found), the version that team uses now (None: not in use)."""

    version: PluginVersion | None
    in_use: PluginVersion | None

    @property
    def upgraded(self) -> bool:
        if self.version is None or self.in_use is None:
            return False
        try:
            return Version(self.in_use.version) >= Version(self.version.version)
        except InvalidVersion:
            return self.in_use.pk == self.version.pk


def shipped_state(request: ChangeRequest) -> Shipped:
    """For a shipped request's page: the version of its change run, and whether the asking
    team uses it (or a later one) now, so the page never says an upgrade waits once it is
    done."""
    shipped = (PluginVersion.objects.filter(plugin_id=request.plugin_id,
                                            run__project_id=request.project_id,
                                            status=PluginVersion.Status.PUBLISHED)
               .order_by("-pk").first() if request.project_id else None)
    active = (Activation.objects.select_related("version")
              .filter(team_id=request.from_team_id, plugin_id=request.plugin_id,
                      status=Activation.Status.ACTIVE).first())
    return Shipped(version=shipped, in_use=active.version if active else None)


def shown_value(value: Any) -> str:
    """A case's value as the page shows it: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False)


@dataclass(frozen=True)
class CaseRow:
    """One case of a change request as its page shows it, with what the person typed."""

    number: int
    command: str
    input: str
    got: str
    failed: bool
    has_expected: bool
    expected: str
    expected_words: str
    typed: str
    error: str


def case_rows(request: ChangeRequest, typed: dict[int, str],
              errors: dict[str, str]) -> list[CaseRow]:
    return [CaseRow(number=number, command=case.get("command", ""),
                    input=shown_value(case.get("input", {})),
                    got=shown_value(case["got"]) if case.get("got") is not None else "",
                    failed=case.get("failed", False), has_expected="expected" in case,
                    expected=shown_value(case["expected"]) if "expected" in case else "",
                    expected_words=case.get("expected_words", ""),
                    typed=typed.get(number, ""), error=errors.get(f"expected-{number}", ""))
            for number, case in enumerate(request.cases)]


def change_run_shown(request: ChangeRequest, owner_side: bool) -> Run | None:
    """The change run started for the request, for the owning team's side of its page."""
    if not (owner_side and request.project_id):
        return None
    return Run.objects.filter(project_id=request.project_id).order_by("-id").first()
