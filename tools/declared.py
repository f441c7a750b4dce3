"""What a version declares for the teams that use it, read from its reviewed plugin.toml.

Everything is read from the plugin.toml among the version's files, exactly what was reviewed,
through the plugin contract (`PluginVersion.reviewed_manifest`, a `PluginManifest` read once per
text); this module only finds what the tools need in it.
"""

from __future__ import annotations

import logging
from typing import cast

from autocoder.plugins import InputField, PluginManifest, SettingDecl
from marketplace.models import PluginVersion
from marketplace.types import StoredCommand

logger = logging.getLogger(__name__)


def manifest_of(version: PluginVersion) -> PluginManifest | None:
    """The version's plugin.toml as a manifest (None: unreadable)."""
    return version.reviewed_manifest


def declared_settings(version: PluginVersion) -> list[SettingDecl]:
    manifest = manifest_of(version)
    if manifest is None:
        return []
    if manifest.raw.get("settings") and not manifest.settings:
        # Uploads with bad declarations are refused; an older version simply has none usable.
        logger.warning("version %s declares settings the portal cannot read", version.pk)
    return list(manifest.settings)


def declared_hosts(version: PluginVersion) -> list[str]:
    """The hosts its api.http may reach ([permissions] hosts), as plugin.toml names them."""
    manifest = manifest_of(version)
    return [rule.text() for rule in manifest.hosts] if manifest is not None else []


def declared_inputs(version: PluginVersion, command: str) -> list[InputField]:
    """The command's input schema ([] without one: the form then follows the examples)."""
    manifest = manifest_of(version)
    declared = manifest.command(command) if manifest is not None else None
    return list(declared.inputs) if declared is not None else []


def entry_of(version: PluginVersion) -> str:
    manifest = manifest_of(version)
    return manifest.entry if manifest is not None else ""


def command_names(version: PluginVersion) -> list[str]:
    manifest = manifest_of(version)
    return [item.name for item in manifest.commands] if manifest is not None else []


def command_info(version: PluginVersion, command: str) -> StoredCommand | None:
    """{name, description, examples} of one command, from what the version stores (its
    examples are there, not in plugin.toml)."""
    for item in version.commands:
        if isinstance(item, dict) and item.get("name") == command:
            return cast("StoredCommand", item)
    declared = manifest_of(version)
    found = declared.command(command) if declared is not None else None
    return {"name": found.name, "description": found.description} if found else None
