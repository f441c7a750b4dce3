"""Suggestions from use (docs/tools.md, "When a tool keeps failing"): a version whose calls keep
failing for a team is told to that team's admins and reviewers, with the failures grouped by
error, and a link that asks for a change with the latest failing call attached.

A team is told about its own calls only: another team's inputs are that team's data. When the
team that calls is not the one that makes the plugin, its change request goes to the maker
(tools/services/changes.py), so the maker hears of it all the same, with the cases the caller
chose to attach. The slow watchdog sweep calls `failing_tools_tell` (at most every
CHECK_EVERY_S per process); the same version is not told to the same team again within
QUIET_DAYS.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone

from teams.models import Team
from teams.services.notifications import notifications_tool_failing
from tools.models import Invocation

WINDOW = timedelta(hours=24)
MIN_CALLS = 5  # fewer calls than this say nothing about a rate
FAILING_SHARE = 0.3  # at least this share of the calls failed
SAME_ERROR_INPUTS = 3  # or one error for at least this many different inputs
QUIET_DAYS = 7
CHECK_EVERY_S = 15 * 60
_last_check = {"at": 0.0}


@dataclass
class ErrorGroup:
    error: str  # the error's first line, as the tool's log shows it
    # fingerprints of the different inputs (a call whose input is not kept, from the API or a
    # schedule, counts as one of its own)
    inputs: set[str] = field(default_factory=set)
    latest_id: int = 0  # the latest failing call with this error


@dataclass
class FailingTool:
    team_id: int
    plugin_name: str
    version: str
    calls: int
    failed: int
    groups: list[ErrorGroup]

    @property
    def latest_failure_id(self) -> int:
        return max(group.latest_id for group in self.groups)

    def message(self) -> str:
        worst = max(self.groups, key=lambda g: len(g.inputs))
        count = len(worst.inputs)
        return (f"{self.plugin_name} {self.version} keeps failing: {self.failed} of"
                f" {self.calls} calls in the last day. Most often: “{worst.error[:120]}”"
                f" ({count} different call{'s' if count != 1 else ''}). Ask for a change"
                " with a failing call attached.")


def failing_tools(*, now: Any = None) -> list[FailingTool]:
    """The (team, version) pairs whose calls of the last WINDOW keep failing: at least
    MIN_CALLS calls with FAILING_SHARE of them failed, or one error for SAME_ERROR_INPUTS
    different inputs. Refused calls (a disabled version, a bad payload) do not count."""
    since = (now or timezone.now()) - WINDOW
    rows = (Invocation.objects.filter(created_at__gte=since,
                                      status__in=[Invocation.Status.OK, Invocation.Status.FAILED])
            .exclude(caller=Invocation.Caller.EVENT)
            .values_list("pk", "team_id", "version_id", "version__version", "plugin__name",
                         "status", "error", "payload").order_by("pk"))
    calls: dict[tuple[int, int], list[Any]] = defaultdict(list)
    for row in rows:
        calls[(row[1], row[2])].append(row)
    found = []
    for (team_id, _), items in calls.items():
        failed = [item for item in items if item[5] == Invocation.Status.FAILED]
        groups = _groups(failed)
        often = len(items) >= MIN_CALLS and len(failed) >= FAILING_SHARE * len(items)
        if groups and (often or max(len(g.inputs) for g in groups) >= SAME_ERROR_INPUTS):
            found.append(FailingTool(team_id=team_id, plugin_name=items[0][4],
                                     version=items[0][3], calls=len(items), failed=len(failed),
                                     groups=groups))
    return found


def _groups(failed: list[Any]) -> list[ErrorGroup]:
    groups: dict[str, ErrorGroup] = {}
    for pk, *_, error, payload in failed:
        line = next((text.strip() for text in (error or "").splitlines() if text.strip()),
                    "no error text")[:300]
        group = groups.setdefault(line, ErrorGroup(error=line))
        group.inputs.add(hashlib.sha256(json.dumps(payload, sort_keys=True).encode())
                         .hexdigest() if payload else f"call {pk}")
        group.latest_id = max(group.latest_id, pk)
    return list(groups.values())


def failing_tools_tell(*, now: Any = None, force: bool = False) -> list[int]:
    """Tell each team about its tools that keep failing (see the module's doc); returns the
    teams told. Without `force`, does nothing when it looked less than CHECK_EVERY_S ago in
    this process (the watchdog sweep calls it every minute)."""
    if not force and time.monotonic() - _last_check["at"] < CHECK_EVERY_S and _last_check["at"]:
        return []
    _last_check["at"] = time.monotonic()
    told = []
    for tool in failing_tools(now=now):
        team = Team.objects.get(pk=tool.team_id)
        query = urlencode({"team": team.slug, "invocation": tool.latest_failure_id})
        url = f"{reverse('tools:change_ask', args=[tool.plugin_name])}?{query}"
        # the same link for the same version: told once within QUIET_DAYS
        key = f"{url.split('&invocation=')[0]}&version={tool.version}"
        if notifications_tool_failing(
                team=team, message=tool.message(), quiet_days=QUIET_DAYS, same_as=key,
                url=f"{key}&invocation={tool.latest_failure_id}"):
            told.append(team.pk)
    return told
