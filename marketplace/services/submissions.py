"""How a checked plugin becomes a version row: the plugin row (created or locked), the
listing in force, the commands, the summary embedding and the stored artifacts. Shared by
uploads, the checks, run publication and the command line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from marketplace.build import BuiltArtifact
from marketplace.checks import CheckedPlugin, name_and_version_check
from marketplace.models import Artifact, Plugin, PluginVersion
from marketplace.storage import artifact_dir_remove, artifact_relpath, artifact_write
from marketplace.validation import Manifest, PackageError, clean_tags, normalize_name, source_sha256
from runs.models import ApprovalRequest, Run
from teams.models import Team
from teams.services.audit import audit_record

logger = logging.getLogger(__name__)


MAX_CHANGELOG_CHARS = 20_000


def version_create(*, team: Team, checked: CheckedPlugin, source: str,
                   user: User | None, visibility: str, category: str,
                   tags: Sequence[str], changelog: str, run: Run | None = None,
                   spec: dict[str, object] | None = None,
                   models_used: list[dict[str, object]] | None = None, iterations: int = 0,
                   approval: ApprovalRequest | None = None) -> PluginVersion:
    listing = listing_asked(checked.manifest, visibility, category, tags)
    embedding = summary_embedding_of(checked.manifest.name, checked.manifest.summary,
                                     checked.manifest.commands)
    created: PluginVersion | None = None
    try:
        with transaction.atomic():
            plugin = plugin_for_submission(team, checked.manifest, listing)
            listing = listing_in_force(plugin, listing)
            created = PluginVersion.objects.create(
                plugin=plugin, version=checked.manifest.version, source=source,
                summary=checked.manifest.summary, manifest=checked.manifest.as_dict(),
                commands=commands_with_examples(checked.manifest, spec), files=checked.files,
                source_sha256=source_sha256(checked.files), readme=checked.files["README.md"],
                readme_html=checked.readme_html, changelog=changelog.strip()[:MAX_CHANGELOG_CHARS],
                requires_python=checked.requires_python, test_report=checked.tests,
                quality=checked.quality,
                safety_report=checked.safety, safety_verdict=checked.safety["verdict"],
                summary_embedding=embedding, run=run, spec=spec, models_used=models_used or [],
                iterations=iterations, submitted_by=user, approval=approval, **listing)
            artifacts_store(plugin, created, checked.artifacts)
            audit_record(actor=user, action="plugin.submit", team=team, target=created,
                         after={"plugin": plugin.name, "version": created.version,
                                "source": source, "visibility": listing["visibility"],
                                "run": run.pk if run else None})
    except BaseException:
        if created is not None and created.pk:
            artifact_dir_remove(normalize_name(checked.manifest.name), created.pk)
        raise
    return created


def listing_asked(manifest: Manifest, visibility: str, category: str,
                  tags: Sequence[str]) -> dict[str, object]:
    if visibility not in Plugin.Visibility.values:
        raise PackageError([f"visibility must be one of {', '.join(Plugin.Visibility.values)}"])
    category = category or manifest.category or Plugin.Category.OTHER
    if category not in Plugin.Category.values:
        raise PackageError([f"category {category!r} is not one of"
                            f" {', '.join(Plugin.Category.values)}"])
    return {"visibility": visibility, "category": category,
            "tags": list(clean_tags(tags) if tags else manifest.tags)}


def listing_in_force(plugin: Plugin, asked: dict[str, object]) -> dict[str, object]:
    """Visibility, category and tags belong to the plugin once it is published: a new version
    keeps them (so an upload by a requester cannot make a team plugin public); team admins
    change them on the plugin's page. Until the first publication the submission decides."""
    if plugin.published_at is None:
        return asked
    return {"visibility": plugin.visibility, "category": plugin.category,
            "tags": list(plugin.tags)}


def plugin_for_submission(team: Team, manifest: Manifest, listing: dict[str, object]) -> Plugin:
    """The team's plugin row, locked, creating it for a first submission; the name and version
    rules are checked again under the lock, so two racing submissions cannot both pass."""
    if name_and_version_check(team=team, manifest=manifest) is None:
        try:
            with transaction.atomic():
                Plugin.objects.create(name=manifest.name, normalized_name=manifest.normalized_name,
                                      team=team, summary=manifest.summary, **listing)
        except IntegrityError:
            pass  # created meanwhile by a concurrent submission: checked again below
    plugin = Plugin.objects.select_for_update().get(normalized_name=manifest.normalized_name)
    name_and_version_check(team=team, manifest=manifest)
    return plugin


def commands_with_examples(manifest: Manifest,
                           spec: dict[str, Any] | None) -> list[dict[str, object]]:
    """Commands from the manifest, with the spec's examples for a generated plugin."""
    examples: dict[str, list[Any]] = {}
    for command in (spec or {}).get("commands", []):
        examples[command.get("name", "")] = command.get("examples", [])
    result = []
    for command in manifest.commands:
        entry = command.as_dict()
        entry["examples"] = entry["examples"] or examples.get(command.name, [])
        result.append(entry)
    return result


def summary_embedding_of(name: str, summary: str,
                         commands: Sequence[Any] = ()) -> list[float] | None:
    """The embedding searched by meaning (the name, the summary and what each command does:
    `commands`, the manifest's); a failing embedder costs semantic search for this plugin
    (full text still finds it), never the submission."""
    from autocoder.lessons.embedder import EmbedderError, embed_text

    try:
        return [float(x) for x in embed_text(embedding_text(name, summary, commands))]
    except EmbedderError:
        logger.exception("could not embed the summary of %s", name)
        return None


def embedding_text(name: str, summary: str, commands: Sequence[Any] = ()) -> str:
    text = f"{_words(name)}: {summary}"
    tasks = commands_text(commands)
    return f"{text} {tasks}" if tasks else text


def commands_text(commands: Sequence[Any]) -> str:
    """What the commands do, in words ("spending by category: Totals the month's expenses."),
    from manifest commands or the dicts a version stores."""
    parts = []
    for command in commands:
        name = command.get("name", "") if isinstance(command, dict) else command.name
        about = (command.get("description", "") if isinstance(command, dict)
                 else command.description)
        parts.append(f"{_words(str(name))}: {' '.join(str(about or '').split())}".strip(": "))
    return " ".join(parts)


def _words(name: str) -> str:
    return name.replace("-", " ").replace("_", " ")


def artifacts_store(plugin: Plugin, version: PluginVersion,
                    artifacts: Sequence[BuiltArtifact]) -> None:
    for built in artifacts:
        relpath = artifact_relpath(plugin.normalized_name, version.pk, built.filename)
        artifact_write(relpath, built.data)
        Artifact.objects.create(version=version, kind=built.kind, filename=built.filename,
                                sha256=built.sha256, size=len(built.data), path=relpath)
