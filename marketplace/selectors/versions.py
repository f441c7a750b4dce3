"""A plugin's versions as a viewer meets them."""

from __future__ import annotations

from packaging.version import Version

from marketplace.models import Plugin, PluginVersion
from marketplace.selectors.visibility import Viewer


def published_version_of_run(run_id: int) -> PluginVersion | None:
    """The newest published version built from run `run_id`, if any."""
    return (PluginVersion.objects.filter(run_id=run_id, status=PluginVersion.Status.PUBLISHED)
            .select_related("plugin").order_by("-pk").first())


def waiting_version_of_run(run_id: int) -> PluginVersion | None:
    """The version built from run `run_id` that waits for reviewers (submitted, not decided)."""
    return (PluginVersion.objects.filter(run_id=run_id, status=PluginVersion.Status.PENDING)
            .select_related("plugin").order_by("-pk").first())


def plugin_versions(plugin: Plugin, viewer: Viewer) -> list[PluginVersion]:
    """Published versions, newest first; the owner team also sees pending and rejected ones."""
    queryset = plugin.versions.defer("files").prefetch_related("artifacts")
    if not viewer.is_member(plugin.team_id):
        queryset = queryset.filter(status=PluginVersion.Status.PUBLISHED)
    return sorted(queryset, key=lambda v: (Version(v.version), v.id), reverse=True)


def plugin_version_for_viewer(plugin: Plugin, viewer: Viewer, version: str) -> PluginVersion | None:
    for candidate in plugin_versions(plugin, viewer):
        if candidate.version == version or Version(candidate.version) == _version_or_none(version):
            return candidate
    return None


def _version_or_none(text: str) -> Version | None:
    try:
        return Version(text)
    except ValueError:
        return None
