"""The plugin contract: plugin.toml, read and written in one place (docs/engine.md, "The
plugin contract"; docs/plugins.md).

- `parse_manifest(text)` -> `PluginManifest` (frozen dataclasses all the way down), or a
  `ManifestError` listing every problem; `read_manifest(text)` for a reviewed version's file;
- `render_manifest(manifest)` -> the text of plugin.toml;
- the `[permissions]` rule (`Permissions`, `permissions_from_text`; its `hosts` are `HostRule`s,
  autocoder/plugins/hosts.py), the `[[settings]]` and
  `[commands.input]` rules (`settings_declared`, `input_fields`) and the name rules.

A ground module: it imports nothing of the portal, runs, the marketplace, the tools, the
engine, the LLM layer or lessons; they import it.
"""

from autocoder.plugins.declarations import (
    DeclarationError,
    InputField,
    SettingDecl,
    declaration_errors,
    input_fields,
    settings_declared,
)
from autocoder.plugins.errors import ManifestError
from autocoder.plugins.hosts import (
    HostError,
    HostRule,
    address_rule,
    address_url,
    parse_host_rule,
)
from autocoder.plugins.manifest import (
    CommandDecl,
    PluginManifest,
    clean_tags,
    load_toml,
    parse_manifest,
    read_manifest,
)
from autocoder.plugins.names import NAME_PATTERN, normalize_name, package_name
from autocoder.plugins.permissions import (
    FILESYSTEM_MODES,
    Permissions,
    permissions_from_text,
    permissions_or_none,
)
from autocoder.plugins.render import render_manifest

__all__ = [
    "FILESYSTEM_MODES", "NAME_PATTERN", "CommandDecl", "DeclarationError", "HostError",
    "HostRule", "InputField", "ManifestError", "Permissions", "PluginManifest", "SettingDecl",
    "address_rule", "address_url", "clean_tags", "declaration_errors", "input_fields",
    "load_toml", "normalize_name", "package_name", "parse_host_rule", "parse_manifest",
    "permissions_from_text", "permissions_or_none", "read_manifest", "render_manifest",
    "settings_declared",
]
