"""The `[permissions]` rule of plugin.toml, written once (docs/engine.md, "The plugin contract").

```toml
[permissions]
network = false        # true or false; false when left out
filesystem = "none"    # "none" or "workdir"; "none" when left out
hosts = []             # where api.http may connect (autocoder/plugins/hosts.py); none when left out
```

No other key is allowed. The marketplace's checks of an upload, the safety gate reading a
plugin directory and the engine's permissions requests all read the table here.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autocoder.plugins.errors import ManifestError
from autocoder.plugins.hosts import HostRule, host_rules

FILESYSTEM_MODES = ("none", "workdir")
PERMISSION_KEYS = ("network", "filesystem", "hosts")


@dataclass(frozen=True)
class Permissions:
    """What a plugin declares in plugin.toml [permissions]."""

    network: bool = False
    filesystem: str = "none"  # "none" | "workdir"
    hosts: tuple[HostRule, ...] = ()  # where api.http may connect; () when none are declared

    def __post_init__(self) -> None:
        if not isinstance(self.network, bool):
            raise ValueError(f"permissions.network must be true or false, not {self.network!r}")
        if self.filesystem not in FILESYSTEM_MODES:
            raise ValueError(f"permissions.filesystem must be one of {FILESYSTEM_MODES}, "
                             f"not {self.filesystem!r}")
        if not isinstance(self.hosts, tuple) or not all(
                isinstance(rule, HostRule) for rule in self.hosts):
            raise ValueError(f"permissions.hosts must be a tuple of HostRule, not {self.hosts!r}")

    def as_dict(self) -> dict[str, Any]:
        """{network, filesystem}, and `hosts` (as plugin.toml writes them) when any are
        declared: a version without hosts is stored as it always was."""
        table: dict[str, Any] = {"network": self.network, "filesystem": self.filesystem}
        if self.hosts:
            table["hosts"] = [rule.text() for rule in self.hosts]
        return table


def permission_errors(table: Mapping[str, Any], errors: list[str]) -> Permissions:
    """The permissions a `[permissions]` table grants; each problem is appended to `errors`
    and the strictest value is used in its place."""
    for key in table:
        if key not in PERMISSION_KEYS:
            errors.append(f"plugin.toml: [permissions] has an unknown key {key!r}"
                          f" (expected {', '.join(PERMISSION_KEYS)})")
    network = table.get("network", False)
    if not isinstance(network, bool):
        errors.append("plugin.toml: [permissions] network must be true or false")
        network = False
    filesystem = table.get("filesystem", "none")
    if filesystem not in FILESYSTEM_MODES:
        errors.append(f"plugin.toml: [permissions] filesystem must be one of"
                      f" {', '.join(FILESYSTEM_MODES)} (got {filesystem!r})")
        filesystem = "none"
    hosts = host_rules(table.get("hosts", []), errors)
    return Permissions(network=network, filesystem=filesystem, hosts=hosts)


def permissions_from_table(value: object) -> Permissions:
    """The permissions of a parsed `[permissions]` value (None: not written, the defaults);
    ManifestError names every problem."""
    errors: list[str] = []
    if value is None:
        return Permissions()
    if not isinstance(value, dict):
        raise ManifestError(["plugin.toml: [permissions] must be a table"])
    permissions = permission_errors(value, errors)
    if errors:
        raise ManifestError(errors)
    return permissions


def permissions_from_text(text: str) -> Permissions:
    """The permissions plugin.toml grants, reading nothing else of it; ManifestError when the
    file is not TOML or the table breaks the rule."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError([f"plugin.toml: not valid TOML ({exc})"]) from None
    return permissions_from_table(data.get("permissions"))


def permissions_or_none(text: str) -> Permissions | None:
    """The permissions plugin.toml grants, or None when they cannot be read (not TOML, or the
    table breaks the rule)."""
    try:
        return permissions_from_text(text)
    except ManifestError:
        return None
