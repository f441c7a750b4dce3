"""plugin.toml, read once into a typed manifest (docs/engine.md, "The plugin contract").

```toml
[plugin]
name = "word-count"                 # the distribution name; its package is word_count
version = "1.0.0"                   # PEP 440, no local part
summary = "Counts words."
entry = "word_count.plugin:Plugin"  # always <package>.plugin:Plugin
category = "Text"                   # optional; tags and requires_python too

[permissions]                       # autocoder/plugins/permissions.py
[runtime]                           # libraries = ["openpyxl==3.1.5"]
[[settings]]                        # autocoder/plugins/declarations.py
[[commands]]                        # name, description, examples, [commands.input]
```

`parse_manifest` is the check a plugin meets before anything is built from it: every problem
is collected and raised together in a ManifestError. `read_manifest` reads the plugin.toml of a
version already reviewed, as well as it can: a part that breaks the rules is left empty (the
settings, a command's input schema), never guessed. autocoder/plugins/render.py writes the file.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from autocoder.plugins.declarations import (
    InputField,
    SettingDecl,
    collect_fields,
    collect_settings,
)
from autocoder.plugins.errors import ManifestError
from autocoder.plugins.hosts import HostRule
from autocoder.plugins.names import NAME_PATTERN, normalize_name, package_name
from autocoder.plugins.permissions import Permissions, permission_errors

MAX_SUMMARY_CHARS = 4000
MAX_TAGS = 10
TAG_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,29}")
TOP_LEVEL_KEYS = ("plugin", "permissions", "commands", "runtime", "settings", "tool")
MANIFEST_KEYS = ("name", "version", "summary", "entry", "category", "tags", "requires_python")
COMMAND_KEYS = ("name", "description", "examples", "input")


@dataclass(frozen=True)
class CommandDecl:
    """A `[[commands]]` table: what the command is, its examples and its input schema."""

    name: str
    description: str = ""
    examples: tuple[dict[str, Any], ...] = ()
    inputs: tuple[InputField, ...] = ()  # [commands.input]; () when it declares no schema

    def as_dict(self) -> dict[str, Any]:
        """What the marketplace stores of the command (the input schema is read from the
        reviewed plugin.toml itself)."""
        return {"name": self.name, "description": self.description,
                "examples": [dict(example) for example in self.examples]}


@dataclass(frozen=True)
class PluginManifest:
    """Everything plugin.toml says, checked and typed."""

    name: str
    version: str
    summary: str
    entry: str
    package: str
    permissions: Permissions = field(default_factory=Permissions)
    commands: tuple[CommandDecl, ...] = ()
    settings: tuple[SettingDecl, ...] = ()
    category: str = ""
    tags: tuple[str, ...] = ()
    requires_python: str = ""
    libraries: tuple[str, ...] = ()  # pinned plugin-runtime libraries, from [runtime]
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def network(self) -> bool:
        return self.permissions.network

    @property
    def filesystem(self) -> str:
        return self.permissions.filesystem

    @property
    def hosts(self) -> tuple[HostRule, ...]:
        """Where the plugin's api.http may connect ([permissions] hosts)."""
        return self.permissions.hosts

    @property
    def address_settings(self) -> tuple[SettingDecl, ...]:
        """The settings of `kind = "address"`: where else api.http may connect, once a team
        admin enters and approves the address (docs/safety.md, "Hosts a version may reach")."""
        return tuple(setting for setting in self.settings if setting.is_address)

    @property
    def normalized_name(self) -> str:
        return normalize_name(self.name)

    def command(self, name: str) -> CommandDecl | None:
        return next((command for command in self.commands if command.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        """The summary the marketplace stores with a version (`PluginVersion.manifest`)."""
        return {"name": self.name, "version": self.version, "summary": self.summary,
                "entry": self.entry, "package": self.package,
                "permissions": self.permissions.as_dict(),
                "commands": [command.as_dict() for command in self.commands],
                "category": self.category, "tags": list(self.tags),
                "requires_python": self.requires_python, "libraries": list(self.libraries)}


def load_toml(text: str) -> dict[str, Any]:
    """plugin.toml as TOML data; ManifestError (naming the line) when it is not TOML."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError([f"plugin.toml: not valid TOML ({exc})"]) from None


def parse_manifest(text: str) -> PluginManifest:
    """The manifest of plugin.toml, or a ManifestError listing every problem."""
    manifest, errors = manifest_and_errors(load_toml(text))
    if errors:
        raise ManifestError(errors)
    return manifest


def read_manifest(text: str) -> PluginManifest | None:
    """What a reviewed plugin.toml declares, as well as it can be read (None: not TOML).

    For files already checked when they were uploaded: a part that breaks today's rules is
    read as empty (all the settings, or one command's input schema) rather than refused."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    return manifest_and_errors(data)[0]


def manifest_and_errors(data: Mapping[str, Any]) -> tuple[PluginManifest, list[str]]:
    """The manifest of parsed TOML data, with every problem found; a part with a problem is
    replaced by its strictest or empty value."""
    errors: list[str] = []
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            errors.append(f"plugin.toml: unknown table or key {key!r} (expected [plugin],"
                          " [permissions], [runtime], [[settings]], [[commands]])")
    plugin = _table(data, "plugin", errors, required=True)
    permissions_table = _table(data, "permissions", errors, required=False)
    fields = _manifest_fields(plugin, errors)
    permissions = permission_errors(permissions_table, errors)
    commands = _commands(data.get("commands"), errors)
    libraries = _libraries(_table(data, "runtime", errors, required=False), errors)
    # Declared settings and input schemas: the rules activation and the tools' forms rely on.
    settings, commands = _declarations(data, commands, errors)
    return PluginManifest(**fields, permissions=permissions, commands=commands,
                          settings=settings, libraries=libraries, raw=data), errors


def _declarations(data: Mapping[str, Any], commands: tuple[CommandDecl, ...],
                  errors: list[str]) -> tuple[tuple[SettingDecl, ...], tuple[CommandDecl, ...]]:
    setting_errors: list[str] = []
    settings = collect_settings(data, setting_errors)
    input_errors: list[str] = []
    inputs: dict[str, tuple[InputField, ...]] = {}
    raw_commands = data.get("commands", [])
    for item in raw_commands if isinstance(raw_commands, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            found_errors: list[str] = []
            found = collect_fields(item, item["name"], found_errors)
            input_errors += found_errors
            inputs.setdefault(item["name"], () if found_errors else tuple(found))
    errors += setting_errors + input_errors
    commands = tuple(replace(command, inputs=inputs.get(command.name, ()))
                     for command in commands)
    return (() if setting_errors else tuple(settings)), commands


def _libraries(runtime: Mapping[str, Any], errors: list[str]) -> tuple[str, ...]:
    """[runtime] libraries: the plugin runtime's libraries the plugin uses, each pinned to the
    runtime's version ("openpyxl==3.1.5" or just "openpyxl")."""
    from autocoder.runtime import LIBRARIES  # the runtime's own table of what it holds

    value = runtime.get("libraries", [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        errors.append("plugin.toml: [runtime] libraries must be a list of strings")
        return ()
    known = {normalize_name(lib.distribution): lib for lib in LIBRARIES}
    pins = []
    for item in value:
        name, _, version = item.partition("==")
        lib = known.get(normalize_name(name.strip()))
        if lib is None or (version and version.strip() != lib.version):
            offered = ", ".join(f"{lib.distribution}=={lib.version}" for lib in LIBRARIES)
            errors.append(f"plugin.toml: [runtime] library {item!r} is not in the plugin "
                          f"runtime (it has {offered}; see docs/plugins.md)")
            continue
        pins.append(f"{lib.distribution}=={lib.version}")
    return tuple(pins)


def _table(data: Mapping[str, Any], key: str, errors: list[str], *,
           required: bool) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        if required:
            errors.append(f"plugin.toml: the [{key}] table is missing")
        return {}
    if not isinstance(value, dict):
        errors.append(f"plugin.toml: [{key}] must be a table")
        return {}
    return value


class ManifestFields(TypedDict):
    """The [plugin] table's fields as PluginManifest takes them."""
    name: str
    version: str
    summary: str
    entry: str
    package: str
    category: str
    tags: tuple[str, ...]
    requires_python: str


def _manifest_fields(plugin: Mapping[str, Any], errors: list[str]) -> ManifestFields:
    for key in plugin:
        if key not in MANIFEST_KEYS:
            errors.append(f"plugin.toml: [plugin] has an unknown key {key!r}"
                          f" (expected {', '.join(MANIFEST_KEYS)})")
    name = _name(plugin.get("name"), errors)
    package = package_name(name) if name else ""
    return {
        "name": name,
        "version": _version(plugin.get("version"), errors),
        "summary": _summary(plugin.get("summary"), errors),
        "entry": _entry(plugin.get("entry"), package, errors),
        "package": package,
        "category": _optional_text(plugin, "category", errors),
        "tags": _tags(plugin.get("tags", []), errors),
        "requires_python": _requires_python(plugin.get("requires_python", ""), errors),
    }


def _name(value: object, errors: list[str]) -> str:
    # The spec's rule, plus PEP 508's: a distribution name starts and ends with a letter/digit.
    if (not isinstance(value, str) or not NAME_PATTERN.fullmatch(value)
            or not (value[0].isalnum() and value[-1].isalnum())):
        errors.append("plugin.toml: [plugin] name must be 1-64 characters: letters, digits,"
                      f" - and _, starting and ending with a letter or digit (got {value!r})")
        return ""
    return value


def _version(value: object, errors: list[str]) -> str:
    if not isinstance(value, str):
        errors.append("plugin.toml: [plugin] version must be a string like \"1.0.0\""
                      f" (got {value!r})")
        return ""
    try:
        parsed = Version(value)
    except InvalidVersion:
        errors.append(f"plugin.toml: [plugin] version {value!r} is not a valid version"
                      " (PEP 440, e.g. 1.0.0 or 1.1.0rc1)")
        return ""
    if parsed.local:
        errors.append(f"plugin.toml: [plugin] version {value!r} has a local part (+...),"
                      " which package indexes do not accept")
        return ""
    return str(parsed)


def _summary(value: object, errors: list[str]) -> str:
    if not isinstance(value, str) or not value.strip():
        errors.append("plugin.toml: [plugin] summary is required (one paragraph of text)")
        return ""
    if len(value) > MAX_SUMMARY_CHARS:
        errors.append(f"plugin.toml: [plugin] summary must be at most {MAX_SUMMARY_CHARS}"
                      f" characters (got {len(value)})")
    return value.strip()


def _entry(value: object, package: str, errors: list[str]) -> str:
    """Always <package>.plugin:Plugin; a reviewed file's own entry is kept as it is written."""
    expected = f"{package}.plugin:Plugin" if package else "<package>.plugin:Plugin"
    if value != expected:
        errors.append(f"plugin.toml: [plugin] entry must be {expected!r} (got {value!r})")
    return value if isinstance(value, str) and value else expected


def _optional_text(table: Mapping[str, Any], key: str, errors: list[str]) -> str:
    value = table.get(key, "")
    if not isinstance(value, str):
        errors.append(f"plugin.toml: [plugin] {key} must be a string")
        return ""
    return value.strip()


def _tags(value: object, errors: list[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(tag, str) for tag in value):
        errors.append("plugin.toml: [plugin] tags must be a list of strings")
        return ()
    try:
        return clean_tags(value)
    except ManifestError as exc:
        errors.extend(f"plugin.toml: [plugin] {error}" for error in exc.errors)
        return ()


def clean_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Lower-cased, de-duplicated tags in their first order; ManifestError names a bad one."""
    result: list[str] = []
    for raw in tags:
        tag = raw.strip().lower().replace(" ", "-")
        if not tag:
            continue
        if not TAG_PATTERN.fullmatch(tag):
            raise ManifestError([f"tag {raw!r} must be 1-30 letters, digits or -"])
        if tag not in result:
            result.append(tag)
    if len(result) > MAX_TAGS:
        raise ManifestError([f"at most {MAX_TAGS} tags (got {len(result)})"])
    return tuple(result)


def _requires_python(value: object, errors: list[str]) -> str:
    if not isinstance(value, str):
        errors.append("plugin.toml: [plugin] requires_python must be a string like \">=3.11\"")
        return ""
    try:
        return str(SpecifierSet(value)) if value.strip() else ""
    except InvalidSpecifier:
        errors.append(f"plugin.toml: [plugin] requires_python {value!r} is not a version"
                      " specifier (e.g. \">=3.11\")")
        return ""


def _commands(value: object, errors: list[str]) -> tuple[CommandDecl, ...]:
    if not isinstance(value, list) or not value:
        errors.append("plugin.toml: at least one [[commands]] table is required")
        return ()
    commands: list[CommandDecl] = []
    for i, raw in enumerate(value, start=1):
        command = _command(raw, i, errors)
        if command is None:
            continue
        if any(other.name == command.name for other in commands):
            errors.append(f"plugin.toml: command {command.name!r} is declared twice")
        commands.append(command)
    return tuple(commands)


def _command(raw: object, index: int, errors: list[str]) -> CommandDecl | None:
    where = f"plugin.toml: [[commands]] #{index}"
    if not isinstance(raw, dict):
        errors.append(f"{where} must be a table")
        return None
    for key in raw:
        if key not in COMMAND_KEYS:
            errors.append(f"{where} has an unknown key {key!r}"
                          f" (expected {', '.join(COMMAND_KEYS)})")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        errors.append(f"{where} name must be 1-64 letters, digits, - or _ (got {name!r})")
        return None
    description = raw.get("description", "")
    if not isinstance(description, str):
        errors.append(f"{where} description must be a string")
        description = ""
    return CommandDecl(name=name, description=description.strip(),
                       examples=_examples(raw.get("examples", []), f"{where} examples", errors))


def _examples(value: object, where: str, errors: list[str]) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not all(
            isinstance(item, dict) and isinstance(item.get("input"), dict) and "output" in item
            for item in value):
        errors.append(f"{where} must be a list of {{input = {{...}}, output = ...}} tables")
        return ()
    return tuple({"input": item["input"], "output": item["output"]} for item in value)
