"""The tools' section of a team's "How generation is going" page (the "insight_section" hook,
autocoder/hooks.py): per plugin the team makes, the changes asked of it in the period, the ones
shipped, and whether the error rate of its calls went down after each (docs/tools.md, "When a
tool keeps failing"). Measured from the invocation log of every team that uses the plugin:
counts only, never what anyone sent."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q

from marketplace.models import Plugin, PluginVersion
from projects.selectors.insights import InsightSection, Period
from teams.models import Team
from tools.models import ChangeRequest, Invocation

TEMPLATE = "tools/_insight_changes.html"


@dataclass(frozen=True)
class Rate:
    calls: int
    failed: int

    @property
    def share(self) -> float | None:
        return self.failed / self.calls if self.calls else None


@dataclass(frozen=True)
class ChangeRow:
    request: ChangeRequest
    shipped_as: str  # the version it shipped as; "" until then
    before: Rate  # calls of the version it was asked about
    after: Rate | None  # calls of the version it shipped as

    @property
    def went_down(self) -> bool | None:
        """Whether fewer calls fail since (None: not shipped, or no calls to tell yet)."""
        if self.after is None or self.after.share is None or self.before.share is None:
            return None
        return self.after.share < self.before.share


@dataclass
class PluginChanges:
    plugin: Plugin
    rows: list[ChangeRow] = field(default_factory=list)

    @property
    def asked(self) -> int:
        return len(self.rows)

    @property
    def shipped(self) -> int:
        return sum(1 for row in self.rows if row.request.status == ChangeRequest.Status.SHIPPED)


def plugin_changes_section(*, team: Team, period: Period) -> InsightSection | None:
    """None when the team makes no plugin: the page has nothing to say about changes."""
    if not Plugin.objects.filter(team=team, published_at__isnull=False).exists():
        return None
    start, end = period.bounds()
    requests = list(ChangeRequest.objects.filter(team=team, created_at__gte=start,
                                                 created_at__lt=end)
                    .select_related("plugin", "version").order_by("plugin__name", "created_at"))
    shipped = _shipped_versions(requests)
    rates = _rates({r.version_id for r in requests} | set(shipped.values()))
    plugins: dict[int, PluginChanges] = {}
    for request in requests:
        after_id = shipped.get(request.pk)
        row = ChangeRow(request=request,
                        shipped_as=_version_label(after_id) if after_id else "",
                        before=rates.get(request.version_id, Rate(0, 0)),
                        after=rates.get(after_id, Rate(0, 0)) if after_id else None)
        plugins.setdefault(request.plugin_id, PluginChanges(request.plugin)).rows.append(row)
    return InsightSection(TEMPLATE, {"plugins": list(plugins.values())})


def _shipped_versions(requests: list[ChangeRequest]) -> dict[int, int]:
    """The version each shipped request's change run published (request id -> version id)."""
    by_project = {r.project_id: r.pk for r in requests if r.project_id}
    found = (PluginVersion.objects.filter(run__project_id__in=by_project,
                                          status=PluginVersion.Status.PUBLISHED)
             .values_list("run__project_id", "pk"))
    return {by_project[project_id]: version_id for project_id, version_id in found}


def _rates(version_ids: set[int]) -> dict[int, Rate]:
    counted: dict[int, Any] = defaultdict(lambda: Rate(0, 0))
    rows = (Invocation.objects.filter(version_id__in=version_ids,
                                      status__in=[Invocation.Status.OK, Invocation.Status.FAILED])
            .values("version_id")
            .annotate(calls=Count("pk"), failed=Count("pk", filter=Q(
                status=Invocation.Status.FAILED))))
    for row in rows:
        counted[row["version_id"]] = Rate(row["calls"], row["failed"])
    return dict(counted)


def _version_label(version_id: int) -> str:
    return str(PluginVersion.objects.filter(pk=version_id).values_list("version", flat=True)
               .first() or "")
