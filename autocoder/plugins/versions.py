"""The next version of a changed plugin, computed from its two manifests (docs/plugins.md,
"Versions of a changed plugin"): semantic versioning as a team that uses the plugin sees it.

- **major**: a command removed, or a command's input changed in a way an existing caller
  notices (a field removed, its type changed, a new required field, an optional one made
  required, a choice removed);
- **minor**: something new that callers may use and need not (a command, a setting, an
  optional input field, a choice);
- **patch**: nothing a caller sees changed (a fix).

`next_version(old, new)` says which, with the reasons in plain words for the reviewer.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from autocoder.plugins.declarations import InputField
from autocoder.plugins.manifest import CommandDecl, PluginManifest

BUMPS = ("patch", "minor", "major")


@dataclass(frozen=True)
class VersionBump:
    kind: str  # one of BUMPS
    version: str  # the next version, "1.2.0"
    reasons: tuple[str, ...]  # why, for the reviewer; () for a patch


def next_version(old: PluginManifest, new: PluginManifest) -> VersionBump:
    """The version after `old.version` for the change from `old` to `new`."""
    major, minor = _breaking(old, new), _additions(old, new)
    kind = "major" if major else "minor" if minor else "patch"
    return VersionBump(kind=kind, version=bumped(old.version, kind), reasons=tuple(major or minor))


def bumped(version: str, kind: str) -> str:
    """`version` raised by one `kind` step ("1.4.2", "minor" -> "1.5.0"); ValueError for a
    version that is not X.Y.Z-like."""
    if kind not in BUMPS:
        raise ValueError(f"kind must be one of {', '.join(BUMPS)}, not {kind!r}")
    try:
        parts = Version(version).release
    except InvalidVersion:
        raise ValueError(f"{version!r} is not a version like 1.2.3") from None
    x, y, z = (*parts, 0, 0)[:3]
    if kind == "major":
        return f"{x + 1}.0.0"
    if kind == "minor":
        return f"{x}.{y + 1}.0"
    return f"{x}.{y}.{z + 1}"


def _breaking(old: PluginManifest, new: PluginManifest) -> list[str]:
    reasons = []
    new_commands = {c.name: c for c in new.commands}
    for command in old.commands:
        if command.name not in new_commands:
            reasons.append(f"the command {command.name!r} is removed")
        else:
            reasons += _input_breaks(command, new_commands[command.name])
    return reasons


def _input_breaks(old: CommandDecl, new: CommandDecl) -> list[str]:
    if not old.inputs:  # no schema before: nothing a caller was promised about its input
        return []
    where = f"the command {old.name!r}"
    fields = {f.name: f for f in new.inputs}
    if not new.inputs:
        return [f"{where} no longer declares its input fields"]
    reasons = []
    for field in old.inputs:
        now = fields.get(field.name)
        if now is None:
            reasons.append(f"{where} no longer takes {field.name!r}")
        elif now.type != field.type:
            reasons.append(f"{where} takes {field.name!r} as {now.type}, not {field.type}")
        elif now.required and not field.required:
            reasons.append(f"{where} now requires {field.name!r}")
        elif set(field.choices) - set(now.choices):
            gone = ", ".join(sorted(set(field.choices) - set(now.choices)))
            reasons.append(f"{where} no longer accepts {gone} for {field.name!r}")
    known = {f.name for f in old.inputs}
    reasons += [f"{where} requires a new field {f.name!r}" for f in new.inputs
                if f.name not in known and f.required]
    return reasons


def _additions(old: PluginManifest, new: PluginManifest) -> list[str]:
    old_commands = {c.name: c for c in old.commands}
    reasons = [f"a new command {c.name!r}" for c in new.commands if c.name not in old_commands]
    known_settings = {s.name for s in old.settings}
    reasons += [f"a new setting {s.name!r}" for s in new.settings if s.name not in known_settings]
    for command in new.commands:
        before = old_commands.get(command.name)
        if before is not None:
            reasons += _input_additions(before.inputs, command)
    return reasons


def _input_additions(before: tuple[InputField, ...], command: CommandDecl) -> list[str]:
    fields = {f.name: f for f in before}
    where = f"the command {command.name!r}"
    reasons = []
    for field in command.inputs:
        was = fields.get(field.name)
        if was is None and not field.required:
            reasons.append(f"{where} takes a new optional field {field.name!r}")
        elif was is not None and set(field.choices) - set(was.choices):
            new = ", ".join(sorted(set(field.choices) - set(was.choices)))
            reasons.append(f"{where} accepts {new} for {field.name!r}")
    return reasons
