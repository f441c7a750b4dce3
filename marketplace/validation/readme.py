"""Versions, hashes and README: what a version is compared by, and what its page shows."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from packaging.version import Version

from autocoder.markdown import render_markdown
from marketplace.validation.manifest import PackageError


def check_version_order(new: str, existing: Iterable[str], *, name: str) -> None:
    """Versions only go up: equal means "already exists", lower means "going backwards"."""
    versions = [Version(v) for v in existing]
    candidate = Version(new)
    if candidate in versions:
        raise PackageError([f"version {new} of {name} already exists; versions are never"
                            " replaced - raise the version in plugin.toml"])
    newest = max(versions, default=None)
    if newest is not None and candidate < newest:
        raise PackageError([f"version {new} is older than {newest}, the newest version of"
                            f" {name}; versions only go up"])


def source_sha256(files: Mapping[str, str]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    return digest.hexdigest()


def render_readme(text: str) -> str:
    """A plugin's README as its page shows it (autocoder/markdown.py sanitises)."""
    return render_markdown(text)
