"""The package index's reads (PEP 503/691): projects, files, downloads."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from marketplace.models import Artifact, Plugin, PluginVersion
from marketplace.selectors.visibility import Viewer, can_see, plugins_visible


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url_id: int
    sha256: str
    size: int
    version: str
    requires_python: str
    yanked: bool
    yank_reason: str
    uploaded_at: object


def index_projects(viewer: Viewer) -> list[tuple[str, str]]:
    """(display name, normalized name) of every project the viewer may install."""
    return list(plugins_visible(viewer).order_by("normalized_name")
                .values_list("name", "normalized_name"))


def index_project(viewer: Viewer, normalized_name: str) -> Plugin | None:
    return (plugins_visible(viewer).filter(normalized_name=normalized_name)
            .only("id", "name", "normalized_name").first())


def index_files(plugin: Plugin) -> list[IndexFile]:
    rows = (Artifact.objects.filter(version__plugin_id=plugin.id,
                                    version__status=PluginVersion.Status.PUBLISHED)
            .values_list("id", "filename", "sha256", "size", "version__version",
                         "version__requires_python", "version__yanked",
                         "version__yank_reason", "version__published_at"))
    files = [IndexFile(url_id=r[0], filename=r[1], sha256=r[2], size=r[3], version=r[4],
                       requires_python=r[5], yanked=r[6], yank_reason=r[7], uploaded_at=r[8])
             for r in rows]
    return sorted(files, key=lambda f: (Version(f.version), f.filename))


def artifact_for_viewer(viewer: Viewer, artifact_id: int, filename: str) -> Artifact | None:
    artifact = (Artifact.objects.select_related("version__plugin")
                .filter(id=artifact_id, filename=filename,
                        version__status=PluginVersion.Status.PUBLISHED).first())
    if artifact is None or not can_see(viewer, artifact.version.plugin):
        return None
    return artifact
