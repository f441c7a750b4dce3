"""What a version declares for the teams that use it, read from its reviewed plugin.toml.

The marketplace keeps a summary of the manifest (`PluginVersion.manifest`) without the
`[[settings]]` and `[commands.input]` tables, so they are read from the plugin.toml among the
version's files: exactly what was reviewed. The plugin contract (autocoder/plugins/) reads the
file into a manifest, once per text; this module only finds what the tools need in it.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from autocoder.plugins import InputField, PluginManifest, SettingDecl, read_manifest
from marketplace.models import PluginVersion

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=256)
def _manifest(text: str) -> PluginManifest | None:
    return read_manifest(text)


def manifest_of(version: PluginVersion) -> PluginManifest | None:
    """The version's plugin.toml as a manifest (None: unreadable). Published versions never
    change, so each text is read once and every later call gets the same manifest."""
    return _manifest(version.files.get("plugin.toml", ""))


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
    return str(version.manifest.get("entry") or (manifest.entry if manifest else ""))


def command_names(version: PluginVersion) -> list[str]:
    commands = version.manifest.get("commands", [])
    return [str(c.get("name")) for c in commands if isinstance(c, dict) and c.get("name")]


def command_info(version: PluginVersion, command: str) -> dict[str, Any] | None:
    """{name, description, examples} of one command, from what the version stores."""
    for item in version.commands or version.manifest.get("commands", []):
        if isinstance(item, dict) and item.get("name") == command:
            return item
    return None
