"""What the History page tells of each version besides its commit (marketplace/history.py):
the run that made it, who published it at the gate, and the tests it added or changed."""

from __future__ import annotations

from dataclasses import dataclass

from marketplace.history import HistoryEntry
from marketplace.models import Plugin, PluginVersion
from teams.models import AuditEntry


@dataclass(frozen=True)
class VersionStory:
    entry: HistoryEntry
    run_id: int | None  # the run that wrote it (None: uploaded)
    reviewer: str  # who published it at the gate ("" when the log does not say)
    tests_changed: tuple[str, ...]  # test files it added or changed


def version_stories(plugin: Plugin, entries: list[HistoryEntry]) -> list[VersionStory]:
    versions = {v.version: v for v in PluginVersion.objects.filter(
        plugin=plugin, status=PluginVersion.Status.PUBLISHED).only("pk", "version", "run_id")}
    ids = [str(v.pk) for v in versions.values()]
    published_by = dict(AuditEntry.objects.filter(action="plugin.publish", target_id__in=ids)
                        .values_list("target_id", "actor_name"))
    stories = []
    for entry in entries:
        version = versions.get(entry.version)
        stories.append(VersionStory(
            entry=entry, run_id=version.run_id if version is not None else None,
            reviewer=published_by.get(str(version.pk), "") if version is not None else "",
            tests_changed=tuple(change.path for change in entry.files
                                if change.path.startswith("tests/") and change.added)))
    return stories
