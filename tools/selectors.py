"""Reads of the tools app: what a team has activated, its settings (never a secret's value),
tokens, schedules, the invocation log, and usage figures for a plugin's publisher."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import (
    Aggregate,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    Window,
)
from django.db.models.functions import Coalesce, JSONObject, RowNumber
from django.http import Http404
from django.urls import reverse

from autocoder.compiled_queries import Bound, Part, fetch_parts
from autocoder.plugins import SettingDecl
from marketplace.models import Plugin, PluginVersion
from marketplace.selectors.tokens import token_hash
from marketplace.selectors.visibility import can_see, viewer_for
from teams.models import Membership, Team
from tools.declared import declared_settings
from tools.models import (
    Activation,
    Invocation,
    Schedule,
    ToolSetting,
    ToolStorage,
    ToolToken,
    VersionBlock,
)

Status = Activation.Status


def active_activation(team: Team | int, plugin: Plugin | int) -> Activation | None:
    """The activation in force for the team and plugin (with its version), or None."""
    return (Activation.objects.select_related("version", "plugin", "team")
            .filter(team=team, plugin=plugin, status=Status.ACTIVE).first())


class EnteredSetting(TypedDict):
    """One of the team's settings of a tool as `tool_for_call` reads it (a secret's value is
    its sealed text)."""

    name: str
    value: str
    secret: bool


# What a call (and the MCP tool list) reads of the activation, its version, plugin and team: a
# version row also holds its readme, reports, spec and embedding, which a call never needs (and
# would parse each time). tests/tools/test_call_queries.py counts a call's queries, so a field
# read that this leaves out shows there as one query more.
_CALL_PARTS = (
    Part(Activation, ("id", "team_id", "plugin_id", "version_id", "status", "warm_sandbox")),
    Part(PluginVersion, ("id", "plugin_id", "version", "status", "files", "commands"),
         "version__"),
    Part(Plugin, ("id", "name", "normalized_name", "team_id"), "plugin__"),
    Part(Team, ("id", "slug", "name"), "team__"),
)
FOR_CALLS = tuple(column for part in _CALL_PARTS for column in part.columns())
# Compiled once per process with these in place of the call's own values (an id no row has, a
# name no plugin can have): building and compiling the query cost the ORM more CPU than the
# rest of a call's own work (docs/tools.md, "Throughput").
_TEAM, _NAME, _PLUGIN = -1, " plugin name ", -2


def tool_for_call(team: Team | int, *, plugin_name: str | None = None,
                  plugin_id: int | None = None) -> Activation | None:
    """The activation in force of the team's plugin (by normalized name or id), with all a
    call reads of the database before it runs, in one query: its version, plugin and team
    (the fields a call reads, `FOR_CALLS`), `blocked` (a site administrator disabled the
    version), `stored` (the tool's storage, None while it has none) and `entered_settings`
    (the team's settings of the tool, `{name, value, secret}` each, a secret's value sealed).
    tools/services/invocations.py, `invocation_call`."""
    if (plugin_name is None) == (plugin_id is None):
        raise TypeError("tool_for_call: give plugin_name or plugin_id")
    by_name = plugin_name is not None
    bound = (Bound(_TEAM, team if isinstance(team, int) else team.pk),
             Bound(_NAME, plugin_name) if by_name else Bound(_PLUGIN, plugin_id))
    rows = fetch_parts(("tools.tool_for_call", by_name), lambda: _tool_query(by_name),
                       _CALL_PARTS, bound)
    if not rows:
        return None
    (activation, version, plugin, team_row), (blocked, stored, entered) = rows[0]
    # inner joins: every part is there
    assert isinstance(activation, Activation) and isinstance(version, PluginVersion)  # noqa: S101
    assert isinstance(plugin, Plugin) and isinstance(team_row, Team)  # noqa: S101
    activation.version, activation.plugin, activation.team = version, plugin, team_row
    # What the ORM's annotate() would set: the readers take them with getattr.
    vars(activation).update(blocked=blocked, stored=stored, entered_settings=entered)
    return activation


def _tool_query(by_name: bool) -> QuerySet[Activation]:
    block = VersionBlock.objects.filter(version_id=OuterRef("version_id"))
    storage = ToolStorage.objects.filter(team_id=OuterRef("team_id"),
                                         plugin_id=OuterRef("plugin_id")).values("data")[:1]
    entered = ToolSetting.objects.filter(
        team_id=OuterRef("team_id"), plugin_id=OuterRef("plugin_id")).values(
            row=JSONObject(name=F("name"), value=F("value"), secret=F("secret")))
    found = Activation.objects.filter(team_id=_TEAM, status=Status.ACTIVE)
    found = (found.filter(plugin__normalized_name=_NAME) if by_name
             else found.filter(plugin_id=_PLUGIN))
    return (found.annotate(blocked=Exists(block), stored=Subquery(storage),
                           entered_settings=ArraySubquery(entered))
            .order_by("pk").values_list(*FOR_CALLS, "blocked", "stored", "entered_settings")[:1])


def team_tools(team: Team) -> QuerySet[Activation]:
    """The plugins the team uses now, by name; `blocked_reason` is the kill switch's reason
    when a site administrator disabled the version ("" otherwise)."""
    block = VersionBlock.objects.filter(version_id=OuterRef("version_id"))
    return (Activation.objects.select_related("plugin", "version")
            .filter(team=team, status=Status.ACTIVE)
            .annotate(blocked_reason=Coalesce(Subquery(block.values("reason")[:1]), Value(""),
                                              output_field=TextField()))
            .order_by("plugin__normalized_name"))


def pending_activations(team: Team) -> QuerySet[Activation]:
    return (Activation.objects.select_related("plugin", "version", "requested_by")
            .filter(team=team, status=Status.PENDING).order_by("created_at"))


def activation_history(team: Team, plugin: Plugin) -> QuerySet[Activation]:
    return (Activation.objects.select_related("version", "requested_by", "decided_by")
            .filter(team=team, plugin=plugin).exclude(status=Status.PENDING)
            .order_by("-created_at", "-id"))


def activation_for_member(team: Team, pk: int) -> Activation:
    """Activation `pk` of `team` (the caller checked membership), or 404."""
    activation = (Activation.objects.select_related("plugin", "version", "requested_by",
                                                    "decided_by", "previous__version")
                  .filter(team=team, pk=pk).first())
    if activation is None:
        raise Http404("No such activation")
    return activation


def activatable_versions(team: Team, user: AbstractBaseUser | AnonymousUser) -> list[PluginVersion]:
    """Published, not yanked latest versions the team may activate: its own plugins and
    public ones, that the user sees and that are not in use in this version already."""
    viewer = viewer_for(user)
    in_use = set(Activation.objects.filter(team=team, status=Status.ACTIVE)
                 .values_list("version_id", flat=True))
    plugins = (Plugin.objects.select_related("latest_version", "team")
               .filter(latest_version__isnull=False)
               .filter(Q(team=team) | Q(visibility=Plugin.Visibility.PUBLIC))
               .order_by("normalized_name"))
    return [p.latest_version for p in plugins
            if p.latest_version is not None and can_see(viewer, p)
            and p.latest_version_id not in in_use]


def version_for_activation(user: AbstractBaseUser | AnonymousUser, team: Team,
                           name: str, version: str) -> PluginVersion:
    """A published version of a plugin the team may use (its own, or public) and the user
    sees, or 404: another team's team-only or private plugin does not exist here."""
    found = (PluginVersion.objects.select_related("plugin__team")
             .filter(plugin__normalized_name=name, version=version,
                     status=PluginVersion.Status.PUBLISHED).first())
    if found is None or not can_see(viewer_for(user), found.plugin):
        raise Http404("No such plugin version")
    plugin = found.plugin
    if plugin.team_id != team.pk and plugin.visibility != Plugin.Visibility.PUBLIC:
        raise Http404("No such plugin version")
    return found


def tool_for_member(team: Team, name: str) -> Activation:
    """The team's activation in force of plugin `name`, or 404."""
    activation = (Activation.objects.select_related("plugin", "version", "team")
                  .filter(team=team, plugin__normalized_name=name, status=Status.ACTIVE)
                  .first())
    if activation is None:
        raise Http404("This team does not use that plugin")
    return activation


def version_block(version_id: int) -> VersionBlock | None:
    """The kill switch of a version, read at call time (one indexed query)."""
    return VersionBlock.objects.filter(version_id=version_id).first()


def blocked_versions() -> QuerySet[VersionBlock]:
    return (VersionBlock.objects.select_related("version__plugin", "blocked_by")
            .order_by("-created_at"))


# -- settings, storage, tokens, schedules --------------------------------------------------------


@dataclass(frozen=True)
class SettingView:
    """A declared setting as a page shows it: a secret's value never leaves the database."""

    name: str
    description: str
    secret: bool
    is_set: bool
    value: str
    required: bool = True  # calls are refused while a required one is not set
    # An address setting (`kind = "address"`): the host its value names ("" none), and who
    # approved that host for the activation in use ("" not approved yet).
    address: bool = False
    host: str = ""
    approved_by: str = ""


def setting_rows(team: Team, plugin: Plugin) -> dict[str, ToolSetting]:
    return {row.name: row for row in ToolSetting.objects.filter(team=team, plugin=plugin)}


def missing_settings(activation: Activation) -> list[SettingDecl]:
    """The settings the activated version needs (declared, not `required = false`) that the
    team has not entered yet, in plugin.toml's order: calls are refused until they are
    (tools/services/invocations.py, `invocation_check`). One query."""
    needed = [item for item in declared_settings(activation.version) if item.required]
    if not needed:
        return []
    read = getattr(activation, "entered_settings", None)  # read with it: tool_for_call
    if read is not None:
        entered = {row["name"] for row in read if row["value"]}
    else:
        entered = set(ToolSetting.objects.filter(
            team_id=activation.team_id, plugin_id=activation.plugin_id,
            name__in=[item.name for item in needed]).exclude(value="").values_list(
                "name", flat=True))
    return [item for item in needed if item.name not in entered]


def settings_page(activation: Activation) -> str:
    """The address (site-relative) of the tool's Settings page, where a team admin enters them."""
    return reverse("tools:settings", args=[activation.team.slug,
                                           activation.plugin.normalized_name])


def storage_of(team: Team | int, plugin: Plugin | int) -> ToolStorage | None:
    return ToolStorage.objects.filter(team=team, plugin=plugin).first()


def tokens_of(team: Team, plugin: Plugin) -> QuerySet[ToolToken]:
    """The plugin's tokens and the team's tokens of all its tools."""
    return (ToolToken.objects.select_related("created_by")
            .filter(Q(plugin=plugin) | Q(plugin__isnull=True), team=team))


_TOKEN_PARTS = (
    Part(ToolToken, ("id", "team_id", "plugin_id", "name", "last_used_at", "revoked_at")),
    Part(Team, ("id", "slug"), "team__"),
    Part(Plugin, ("id", "normalized_name"), "plugin__"),
)
_HASH = " token hash "


def token_by_raw(raw: str) -> ToolToken | None:
    """The active token `raw` (hashed as the marketplace's index tokens are), or None; read
    with a query compiled once per process, as `tool_for_call` is."""
    if not raw:
        return None
    rows = fetch_parts(("tools.token_by_raw",), _token_query, _TOKEN_PARTS,
                       (Bound(_HASH, token_hash(raw)),))
    if not rows:
        return None
    token, team, plugin = rows[0][0]
    assert isinstance(token, ToolToken) and isinstance(team, Team)  # noqa: S101
    assert plugin is None or isinstance(plugin, Plugin)  # noqa: S101  (a team-wide token)
    token.team, token.plugin = team, plugin
    return token


def _token_query() -> QuerySet[ToolToken]:
    columns = [column for part in _TOKEN_PARTS for column in part.columns()]
    return (ToolToken.objects.filter(token_hash=_HASH, revoked_at__isnull=True)
            .order_by("pk").values_list(*columns)[:1])


def schedules_of(team: Team, plugin: Plugin) -> QuerySet[Schedule]:
    return Schedule.objects.select_related("owner").filter(team=team, plugin=plugin)


# -- the invocation log --------------------------------------------------------------------------


def invocation_log(team: Team, plugin: Plugin, *, limit: int = 200) -> list[Invocation]:
    return list(Invocation.objects.select_related("version", "user", "token", "schedule")
                .filter(team=team, plugin=plugin).order_by("-created_at", "-id")[:limit])


def schedule_results(team: Team, plugin: Plugin, *, per_schedule: int = 5
                     ) -> dict[int, list[Invocation]]:
    """Each schedule's latest calls, newest first, by schedule id (one query): what a
    scheduled call answered is kept as a form's result is, for every member to see."""
    ranked = (Invocation.objects.select_related("version")
              .filter(team=team, plugin=plugin, caller=Invocation.Caller.SCHEDULE,
                      schedule__isnull=False)
              .annotate(rank=Window(RowNumber(), partition_by=[F("schedule_id")],
                                    order_by=[F("created_at").desc(), F("id").desc()]))
              .filter(rank__lte=per_schedule).order_by("schedule_id", "rank"))
    found: dict[int, list[Invocation]] = {}
    for invocation in ranked:
        found.setdefault(invocation.schedule_id or 0, []).append(invocation)
    return found


def recent_results(team: Team, plugin: Plugin, user_id: int, *, limit: int = 5
                   ) -> list[Invocation]:
    """The user's own form results for this tool, newest first."""
    return list(Invocation.objects.select_related("version")
                .filter(team=team, plugin=plugin, user_id=user_id,
                        caller=Invocation.Caller.USER).order_by("-created_at", "-id")[:limit])


def result_for_member(team: Team, plugin: Plugin, pk: int, user_id: int) -> Invocation:
    """One of the user's own form results, or a scheduled call's (the team's schedules are
    every member's), or 404: nobody else's form results show."""
    own = Q(user_id=user_id, caller=Invocation.Caller.USER)
    found = (Invocation.objects.select_related("version", "schedule")
             .filter(own | Q(caller=Invocation.Caller.SCHEDULE), team=team, plugin=plugin,
                     pk=pk).first())
    if found is None:
        raise Http404("No such result")
    return found


# -- usage figures for the publisher -------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    calls: int
    failed: int
    teams: int
    p95_ms: int

    @property
    def error_rate(self) -> float:
        return self.failed / self.calls if self.calls else 0.0


class _P95(Aggregate):
    # PostgreSQL's nearest-rank percentile: the smallest duration at least 95% of calls do not
    # exceed, computed in the database (no list of durations comes to Python).
    function = "percentile_disc"
    template = "%(function)s(0.95) WITHIN GROUP (ORDER BY %(expressions)s)"
    output_field = IntegerField()


def plugin_usage(plugin: Plugin) -> Usage:
    """Counts over every team's calls still in the log: how many, how many failed, how many
    teams, and the 95th percentile of the duration. Nothing that says which team did what."""
    figures = Invocation.objects.filter(
        plugin=plugin, status__in=[Invocation.Status.OK, Invocation.Status.FAILED]).aggregate(
        calls=Count("id"), failed=Count("id", filter=Q(status=Invocation.Status.FAILED)),
        teams=Count("team_id", distinct=True), p95=_P95("duration_ms"))
    return Usage(calls=figures["calls"], failed=figures["failed"], teams=figures["teams"],
                 p95_ms=figures["p95"] or 0)


def may_see_usage(user: AbstractBaseUser | AnonymousUser, plugin: Plugin) -> bool:
    """Only the publisher (a member of the plugin's team) sees its usage figures."""
    if not user.is_authenticated:
        return False
    return Membership.objects.filter(team_id=plugin.team_id, user_id=user.pk).exists()


def manifest_permissions(version: PluginVersion) -> dict[str, object]:
    """`[permissions]` of the version's reviewed plugin.toml."""
    manifest = version.reviewed_manifest
    return manifest.permissions.as_dict() if manifest is not None else {}
