"""plugin.toml as the marketplace reads it: the plugin contract's manifest (autocoder/plugins/),
with its problems raised as a PackageError like every other problem of an upload."""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import Version

from autocoder.plugins import CommandDecl, ManifestError, PluginManifest
from autocoder.plugins import clean_tags as _clean_tags
from autocoder.plugins import parse_manifest as _parse_manifest
from autocoder.plugins.manifest import (
    COMMAND_KEYS,
    MANIFEST_KEYS,
    MAX_SUMMARY_CHARS,
    MAX_TAGS,
    TAG_PATTERN,
)
from autocoder.plugins.names import normalize_name
from autocoder.plugins.permissions import FILESYSTEM_MODES

__all__ = ["COMMAND_KEYS", "FILESYSTEM_MODES", "MANIFEST_KEYS", "MAX_SUMMARY_CHARS", "MAX_TAGS",
           "TAG_PATTERN", "CommandInfo", "Manifest", "PackageError", "canonical_version",
           "clean_tags", "normalize_name", "parse_manifest"]

# The marketplace's names for the contract's types.
Manifest = PluginManifest
CommandInfo = CommandDecl


class PackageError(ManifestError):
    """Every problem found in an upload; `errors` lists them, each naming where it is."""


def parse_manifest(text: str) -> Manifest:
    """plugin.toml's manifest (autocoder.plugins.parse_manifest); PackageError lists every
    problem."""
    try:
        return _parse_manifest(text)
    except ManifestError as exc:
        raise PackageError(exc.errors) from None


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Lower-cased, de-duplicated tags in their first order; PackageError names a bad one."""
    try:
        return _clean_tags(tags)
    except ManifestError as exc:
        raise PackageError(exc.errors) from None


def canonical_version(text: str) -> str:
    return str(Version(text))
