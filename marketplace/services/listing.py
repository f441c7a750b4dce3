"""How a plugin is listed: its newest version, what search reads, its visibility and
category (team admins), and its install count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.auth.models import User
from django.contrib.postgres.search import SearchVector
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import F, Value
from packaging.version import Version

from marketplace.models import Artifact, Plugin, PluginVersion
from marketplace.selectors.visibility import viewer_for
from marketplace.services.submissions import commands_text
from marketplace.validation import PackageError, clean_tags
from teams.models import Membership
from teams.services.audit import audit_record

README_INDEX_CHARS = 20_000


def plugin_listing_refresh(*, plugin: Plugin) -> Plugin:
    """Point the plugin at its newest published, not yanked version and refresh what search
    reads (summary, full-text vector, summary embedding) from it."""
    candidates = list(plugin.versions.filter(status=PluginVersion.Status.PUBLISHED, yanked=False)
                      .only("id", "version", "summary", "readme", "summary_embedding",
                            "commands"))
    latest = max(candidates, key=lambda v: Version(v.version), default=None)
    plugin.latest_version = latest
    fields = ["latest_version"]
    if latest is not None:
        plugin.summary = latest.summary
        plugin.summary_embedding = latest.summary_embedding
        fields += ["summary", "summary_embedding"]
    plugin.save(update_fields=fields)
    readme = latest.readme[:README_INDEX_CHARS] if latest else ""
    Plugin.objects.filter(pk=plugin.pk).update(search_vector=search_vector_for(
        name=plugin.name, summary=plugin.summary, tags=plugin.tags, readme=readme,
        commands=commands_text(latest.commands or []) if latest else ""))
    return plugin


def search_vector_for(*, name: str, summary: str, tags: Iterable[str], readme: str,
                      commands: str = "") -> Any:
    """What full-text search reads: the name first, then the summary, the tags and what the
    commands do (their names and descriptions), then the README."""
    words = name.replace("-", " ").replace("_", " ")
    return (SearchVector(Value(f"{name} {words}"), weight="A", config="english")
            + SearchVector(Value(f"{summary} {' '.join(tags)} {commands}"), weight="B",
                           config="english")
            + SearchVector(Value(readme), weight="C", config="english"))


def plugin_settings_update(*, plugin: Plugin, user: User, visibility: str,
                           category: str, tags: Sequence[str]) -> Plugin:
    """Change who sees the plugin and how it is listed (team admins)."""
    if viewer_for(user).roles.get(plugin.team_id) != Membership.Role.ADMIN:
        raise PermissionDenied("Only the team's admins change a plugin's visibility.")
    if visibility not in Plugin.Visibility.values or category not in Plugin.Category.values:
        raise PackageError(["choose a visibility and a category from the lists"])
    before = {"visibility": plugin.visibility, "category": plugin.category,
              "tags": list(plugin.tags)}
    plugin.visibility, plugin.category, plugin.tags = visibility, category, list(clean_tags(tags))
    with transaction.atomic():
        plugin.save(update_fields=["visibility", "category", "tags"])
        plugin_listing_refresh(plugin=plugin)
        audit_record(actor=user, action="plugin.settings_update", team=plugin.team,
                     target=plugin, before=before,
                     after={"visibility": visibility, "category": category,
                            "tags": list(plugin.tags)})
    return plugin


def artifact_download_record(*, artifact: Artifact) -> None:
    """Count a download; the plugin's install count is the sum over its files."""
    Artifact.objects.filter(pk=artifact.pk).update(download_count=F("download_count") + 1)
    Plugin.objects.filter(pk=artifact.version.plugin_id).update(
        install_count=F("install_count") + 1)
