"""plugin.toml written from a manifest: the one writer of the file (the engine's scaffold and
its permissions requests use it). `parse_manifest(render_manifest(m))` gives `m` back.

Only what the manifest holds is written, in a fixed order, and an empty optional part is
left out, so the same manifest always gives byte-identical text.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any

from autocoder.plugins.declarations import InputField, SettingDecl
from autocoder.plugins.manifest import CommandDecl, PluginManifest

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def render_manifest(manifest: PluginManifest) -> str:
    """The text of plugin.toml for `manifest`."""
    plugin = manifest
    lines = [
        "[plugin]",
        f"name = {toml_string(plugin.name)}",
        f"version = {toml_string(plugin.version)}",
        f"summary = {toml_string(plugin.summary)}",
        f"entry = {toml_string(plugin.entry)}",
    ]
    if plugin.category:
        lines.append(f"category = {toml_string(plugin.category)}")
    if plugin.tags:
        lines.append(f"tags = {toml_value(list(plugin.tags))}")
    if plugin.requires_python:
        lines.append(f"requires_python = {toml_string(plugin.requires_python)}")
    lines += [
        "",
        "[permissions]",
        f"network = {toml_value(manifest.permissions.network)}",
        f"filesystem = {toml_string(manifest.permissions.filesystem)}",
    ]
    if manifest.permissions.hosts:
        hosts = [rule.text() for rule in manifest.permissions.hosts]
        lines.append(f"hosts = {toml_value(hosts)}")
    if manifest.libraries:
        lines += ["", "[runtime]", f"libraries = {toml_value(list(manifest.libraries))}"]
    for setting in manifest.settings:
        lines += ["", *_setting_lines(setting)]
    for command in manifest.commands:
        lines += ["", *_command_lines(command)]
    return "\n".join(lines) + "\n"


def _setting_lines(setting: SettingDecl) -> list[str]:
    return ["[[settings]]", f"name = {toml_string(setting.name)}",
            f"description = {toml_string(setting.description)}",
            f"secret = {toml_value(setting.secret)}",
            *([f"kind = {toml_string(setting.kind)}"] if setting.kind else []),
            *([] if setting.required else ["required = false"])]


def _command_lines(command: CommandDecl) -> list[str]:
    lines = ["[[commands]]", f"name = {toml_string(command.name)}",
             f"description = {toml_string(command.description)}"]
    if command.examples:
        lines.append(f"examples = {toml_value([dict(example) for example in command.examples])}")
    if command.inputs:
        lines.append("[commands.input]")
        lines += [f"{toml_key(field.name)} = {toml_value(_field_table(field))}"
                  for field in command.inputs]
    return lines


def _field_table(field: InputField) -> dict[str, Any]:
    table: dict[str, Any] = {"type": field.type}
    if field.description:
        table["description"] = field.description
    if field.type == "choice":
        table["choices"] = list(field.choices)
    if not field.required:
        table["required"] = False
    return table


def toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are valid TOML, except that TOML has no \\u007f-free
    shortcut for DEL, which JSON leaves raw and TOML forbids, so it is escaped too."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_value(value: Any) -> str:
    """One TOML value on one line (tables inline): what TOML data read back holds."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, datetime.date | datetime.time):  # datetime is a date
        return value.isoformat()
    if isinstance(value, list | tuple):
        return f"[{', '.join(toml_value(item) for item in value)}]"
    if isinstance(value, dict):
        items = ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return f"{{{items}}}" if items else "{}"
    raise TypeError(f"TOML has no value for {type(value).__name__}")
