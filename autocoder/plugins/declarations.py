"""What a plugin declares in plugin.toml for the team that uses it: its settings and, per
command, an optional input schema (docs/plugins.md, "Settings" and "Input schema").

```toml
[[settings]]
name = "api_base"
description = "The address of your accounting system"
secret = false
kind = "address"        # optional: its value is the address api.http may reach (below)

[[commands]]
name = "monthly_totals"
description = "Add up expenses per month"
[commands.input]
csv = { type = "table", description = "Your expenses CSV" }
```

A setting of `kind = "address"` holds a web address (`bookings.example.org` or
`https://bookings.example.org/api`) entered by the team admin who activates the plugin: the
host it names is one api.http may reach once that admin approves it (docs/safety.md, "Hosts a
version may reach"). It is never a secret. Without `kind`, a setting is a plain value.

The rules of these tables, over the parsed TOML: autocoder/plugins/manifest.py builds a
manifest's `settings` and each command's `inputs` with them, and the functions here answer
for a raw table too. Every problem is a sentence starting with "plugin.toml:". What a payload
must look like against these fields is the caller's (autocoder/calling/payload.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autocoder.plugins.errors import ManifestError

INPUT_TYPES = ("text", "number", "choice", "table", "file", "boolean")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_SETTINGS = 50
MAX_INPUT_FIELDS = 50
MAX_CHOICES = 100
SETTING_KEYS = ("name", "description", "secret", "kind", "required")
SETTING_KINDS = ("", "address")  # "": a plain value (or a secret)
FIELD_KEYS = ("type", "description", "choices", "required")


class DeclarationError(ManifestError):
    """plugin.toml declares settings or inputs the portal cannot use; `errors` says each."""


@dataclass(frozen=True)
class SettingDecl:
    """A value the team admin enters when activating the plugin (`api.settings[name]`)."""

    name: str
    description: str
    secret: bool = False
    kind: str = ""  # one of SETTING_KINDS; "address": a web address api.http may reach
    # False: the plugin works without it (a default of its own); a required setting with no
    # value keeps the tool from being called until an admin enters it (docs/tools.md).
    required: bool = True

    @property
    def is_address(self) -> bool:
        return self.kind == "address"


@dataclass(frozen=True)
class InputField:
    """One field of a command's payload, as the form shows it and the API checks it."""

    name: str
    type: str  # one of INPUT_TYPES
    description: str = ""
    choices: tuple[str, ...] = ()  # only for type "choice"
    required: bool = True


# -- settings -----------------------------------------------------------------------------


def settings_declared(manifest: Mapping[str, Any]) -> list[SettingDecl]:
    """The `[[settings]]` of a parsed plugin.toml, in order; [] when it declares none.
    Raises DeclarationError when a declaration is bad."""
    errors: list[str] = []
    found = collect_settings(manifest, errors)
    if errors:
        raise DeclarationError(errors)
    return found


def collect_settings(manifest: Mapping[str, Any], errors: list[str]) -> list[SettingDecl]:
    raw = manifest.get("settings", [])
    if not isinstance(raw, list):
        errors.append("plugin.toml: settings must be written as [[settings]] tables")
        return []
    if len(raw) > MAX_SETTINGS:
        errors.append(f"plugin.toml: at most {MAX_SETTINGS} [[settings]] (found {len(raw)})")
    found: list[SettingDecl] = []
    for index, item in enumerate(raw, start=1):
        where = f"plugin.toml: [[settings]] #{index}"
        if not isinstance(item, dict):
            errors.append(f"{where} must be a table")
            continue
        for key in item:
            if key not in SETTING_KEYS:
                errors.append(f"{where} has an unknown key {key!r}"
                              f" (expected {', '.join(SETTING_KEYS)})")
        name = item.get("name")
        if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
            errors.append(f"{where} name must be an identifier: letters, digits and _, not"
                          f" starting with a digit, at most 64 characters (got {name!r})")
            continue
        where = f"plugin.toml: setting {name!r}"
        description = item.get("description")
        if not isinstance(description, str) or not description.strip():
            errors.append(f"{where} needs a description (what the team admin should enter)")
            description = ""
        secret = item.get("secret", False)
        if not isinstance(secret, bool):
            errors.append(f"{where} secret must be true or false (got {secret!r})")
            secret = True  # when in doubt, never show it again
        kind = _setting_kind(item, where, secret, errors)
        required = item.get("required", True)
        if not isinstance(required, bool):
            errors.append(f"{where} required must be true or false (got {required!r})")
            required = True
        if any(other.name == name for other in found):
            errors.append(f"{where} is declared twice")
            continue
        found.append(SettingDecl(name=name, description=description.strip(), secret=secret,
                                 kind=kind, required=required))
    return found


def _setting_kind(item: Mapping[str, Any], where: str, secret: bool, errors: list[str]) -> str:
    kind = item.get("kind", "")
    if kind not in SETTING_KINDS:
        errors.append(f"{where} kind must be \"address\" or left out (got {kind!r})")
        return ""
    if kind == "address" and secret is not False:
        errors.append(f"{where} is an address (kind = \"address\"): the team admin sees it and"
                      " approves it as a host the plugin reaches, so it cannot be a secret")
    return str(kind)


# -- input schema -------------------------------------------------------------------------


def input_fields(manifest: Mapping[str, Any], command: str) -> list[InputField]:
    """The `[commands.input]` fields of `command`, in order; [] when it declares no schema
    (the form then falls back to the command's examples). Raises DeclarationError when the
    command is not declared or its schema is bad."""
    errors: list[str] = []
    table = _command_table(manifest, command, errors)
    found = collect_fields(table, command, errors) if table is not None else []
    if errors:
        raise DeclarationError(errors)
    return found


def _command_table(manifest: Mapping[str, Any], command: str,
                   errors: list[str]) -> dict[str, Any] | None:
    commands = manifest.get("commands", [])
    for item in commands if isinstance(commands, list) else []:
        if isinstance(item, dict) and item.get("name") == command:
            return item
    errors.append(f"plugin.toml: no [[commands]] table is named {command!r}")
    return None


def collect_fields(command_table: Mapping[str, Any], command: str,
            errors: list[str]) -> list[InputField]:
    raw = command_table.get("input")
    if raw is None:
        return []
    where = f"plugin.toml: [commands.input] of {command!r}"
    if not isinstance(raw, dict):
        errors.append(f"{where} must be a table of field = {{ type = ..., description = ... }}")
        return []
    if len(raw) > MAX_INPUT_FIELDS:
        errors.append(f"{where} has {len(raw)} fields; at most {MAX_INPUT_FIELDS}")
    found: list[InputField] = []
    for name, spec in raw.items():
        field = _field(name, spec, f"{where}, field {name!r}", errors)
        if field is not None:
            found.append(field)
    return found


def _field(name: str, spec: object, where: str, errors: list[str]) -> InputField | None:
    if not IDENTIFIER.fullmatch(name):
        errors.append(f"{where}: the field name must be an identifier (letters, digits and _,"
                      " not starting with a digit, at most 64 characters)")
        return None
    if not isinstance(spec, dict):
        errors.append(f"{where} must be a table such as {{ type = \"text\","
                      " description = \"...\" }}")
        return None
    for key in spec:
        if key not in FIELD_KEYS:
            errors.append(f"{where} has an unknown key {key!r} (expected {', '.join(FIELD_KEYS)})")
    kind = spec.get("type")
    if kind not in INPUT_TYPES:
        errors.append(f"{where} type must be one of {', '.join(INPUT_TYPES)} (got {kind!r})")
        return None
    description = spec.get("description", "")
    if not isinstance(description, str):
        errors.append(f"{where} description must be a string")
        description = ""
    required = spec.get("required", True)
    if not isinstance(required, bool):
        errors.append(f"{where} required must be true or false (got {required!r})")
        required = True
    choices = spec.get("choices")
    if kind == "choice":
        if (not isinstance(choices, list) or not choices or len(choices) > MAX_CHOICES
                or not all(isinstance(c, str) and c for c in choices)):
            errors.append(f"{where} is a choice: it needs choices = [\"...\", ...], 1 to"
                          f" {MAX_CHOICES} non-empty strings")
            return None
        if len(set(choices)) != len(choices):
            errors.append(f"{where} lists a choice twice")
        return InputField(name=name, type=kind, description=description.strip(),
                          choices=tuple(choices), required=required)
    if choices is not None:
        errors.append(f"{where}: only a field of type \"choice\" has choices")
    return InputField(name=name, type=kind, description=description.strip(), required=required)


# -- a whole manifest ---------------------------------------------------------------------


def declaration_errors(manifest: Mapping[str, Any]) -> list[str]:
    """Every problem with the settings and input schemas of a parsed plugin.toml ([] if
    none): what an upload's validation reports."""
    errors: list[str] = []
    collect_settings(manifest, errors)
    commands = manifest.get("commands", [])
    for item in commands if isinstance(commands, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            collect_fields(item, item["name"], errors)
    return errors

