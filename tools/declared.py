"""What a version declares for the teams that use it, read from its reviewed plugin.toml.

The marketplace keeps a summary of the manifest (`PluginVersion.manifest`) without the
`[[settings]]` and `[commands.input]` tables, so they are read from the plugin.toml among the
version's files: exactly what was reviewed. autocoder/runtime/declarations.py decides what
they mean; this module only finds them.
"""

from __future__ import annotations

import functools
import logging
import tomllib
from typing import Any

from autocoder.runtime.declarations import (
    DeclarationError,
    InputField,
    SettingDecl,
    input_fields,
    settings_declared,
)
from marketplace.models import PluginVersion

logger = logging.getLogger(__name__)


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def plugin_toml(version: PluginVersion) -> dict[str, Any]:
    """The version's plugin.toml, parsed (published versions never change: cached)."""
    return _parsed(version.files.get("plugin.toml", ""))


def declared_settings(version: PluginVersion) -> list[SettingDecl]:
    try:
        return settings_declared(plugin_toml(version))
    except DeclarationError:
        # Uploads with bad declarations are refused; an older version simply has none usable.
        logger.warning("version %s declares settings the portal cannot read", version.pk)
        return []


def declared_inputs(version: PluginVersion, command: str) -> list[InputField]:
    """The command's input schema ([] without one: the form then follows the examples)."""
    try:
        return input_fields(plugin_toml(version), command)
    except DeclarationError:
        return []


def entry_of(version: PluginVersion) -> str:
    return str(version.manifest.get("entry") or plugin_toml(version).get("plugin", {})
               .get("entry", ""))


def command_names(version: PluginVersion) -> list[str]:
    commands = version.manifest.get("commands", [])
    return [str(c.get("name")) for c in commands if isinstance(c, dict) and c.get("name")]


def command_info(version: PluginVersion, command: str) -> dict[str, Any] | None:
    """{name, description, examples} of one command, from what the version stores."""
    for item in version.commands or version.manifest.get("commands", []):
        if isinstance(item, dict) and item.get("name") == command:
            return item
    return None
