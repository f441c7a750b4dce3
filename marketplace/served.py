"""Reads: the exact files the package index serves for a version, or will serve for a run's
publish request, so reviewers see what `pip install` would put on a machine."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from marketplace.build import BuildError, artifact_members, ignored_inputs
from marketplace.models import Artifact, PluginVersion
from marketplace.storage import artifact_path
from marketplace.validation import PackageError, check_plugin_files

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServedArtifact:
    kind: str
    filename: str
    members: list[str]
    sha256: str = ""
    size: int = 0
    missing: bool = False  # the file is gone from the artifact store


@dataclass(frozen=True)
class ServedFiles:
    artifacts: list[ServedArtifact] = field(default_factory=list)
    # The plugin's own build configuration, which the portal does not use (shown as a note).
    not_used: list[str] = field(default_factory=list)
    error: str = ""


def served_files_of_version(version: PluginVersion) -> ServedFiles:
    """What the index serves (or will serve, once approved) for this version, read from the
    stored artifacts themselves."""
    artifacts = [_stored(artifact) for artifact in version.artifacts.order_by("kind")]
    # The wheel first: it is what pip installs.
    artifacts.sort(key=lambda a: a.kind != Artifact.Kind.WHEEL)
    return ServedFiles(artifacts=artifacts, not_used=ignored_inputs(version.files or {}))


def _stored(artifact: Artifact) -> ServedArtifact:
    try:
        members = artifact_members(artifact.kind, artifact_path(artifact.path).read_bytes())
    except (OSError, ValueError):
        logger.warning("artifact %s is missing or unreadable", artifact.path, exc_info=True)
        return ServedArtifact(kind=artifact.kind, filename=artifact.filename, members=[],
                              sha256=artifact.sha256, size=artifact.size, missing=True)
    return ServedArtifact(kind=artifact.kind, filename=artifact.filename, members=members,
                          sha256=artifact.sha256, size=artifact.size)


def served_preview(files: Mapping[str, str]) -> dict[str, object]:
    """For a publish request's payload: the wheel and sdist the portal would build from these
    files (the build is deterministic, so this is exactly what a publication serves)."""
    from marketplace.checks import served_artifacts

    try:
        manifest = check_plugin_files(files)
        built = served_artifacts(files, manifest)
    except (PackageError, BuildError) as exc:
        return {"artifacts": [], "not_used": [], "error": str(exc)}
    return {"artifacts": [{"kind": a.kind, "filename": a.filename, "sha256": a.sha256,
                           "size": len(a.data), "members": artifact_members(a.kind, a.data)}
                          for a in built],
            "not_used": ignored_inputs(files), "error": ""}
