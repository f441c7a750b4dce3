"""Artifact files on disk, under settings.VAR_DIR / "artifacts" / <plugin> / <version id>/.

Files are written once, to a temporary name then renamed, so a reader never sees half a wheel;
the version id in the path keeps a rejected submission's files apart from a later one with the
same version number.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from django.conf import settings


def artifacts_root() -> Path:
    return Path(settings.VAR_DIR) / "artifacts"


def artifact_relpath(normalized_name: str, version_id: int, filename: str) -> str:
    return str(PurePosixPath(normalized_name) / str(version_id) / filename)


def artifact_path(relpath: str) -> Path:
    root = artifacts_root().resolve()
    path = (root / relpath).resolve()
    if root not in path.parents:
        raise ValueError(f"artifact path {relpath!r} is outside the artifact store")
    return path


def artifact_write(relpath: str, data: bytes) -> Path:
    path = artifact_path(relpath)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".incoming-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def artifact_dir_remove(normalized_name: str, version_id: int) -> None:
    """Remove one version's directory (used only when its database rows were never committed)."""
    directory = artifact_path(str(PurePosixPath(normalized_name) / str(version_id) / "x")).parent
    shutil.rmtree(directory, ignore_errors=True)
