"""The [permissions] rule of plugin.toml, written once (autocoder/plugins/permissions.py), and
the same words wherever a plugin.toml is read: the marketplace's checks, the safety gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from autocoder.plugins import ManifestError, Permissions, parse_manifest, permissions_from_text
from autocoder.plugins.permissions import permissions_or_none
from autocoder.safety.scan import read_permissions
from marketplace.validation import PackageError
from marketplace.validation import parse_manifest as marketplace_parse

MANIFEST = """{permissions}
[plugin]
name = "word-count"
version = "1.0.0"
summary = "Counts words."
entry = "word_count.plugin:Plugin"

[[commands]]
name = "count"
"""

BAD = [
    ('[permissions]\nshell = true\n',
     "plugin.toml: [permissions] has an unknown key 'shell' (expected network, filesystem, hosts)"),
    ('[permissions]\nnetwork = "yes"\n',
     "plugin.toml: [permissions] network must be true or false"),
    ('[permissions]\nfilesystem = "everything"\n',
     "plugin.toml: [permissions] filesystem must be one of none, workdir (got 'everything')"),
    ('permissions = 1\n', "plugin.toml: [permissions] must be a table"),
]


def test_left_out_the_permissions_are_the_strictest() -> None:
    assert permissions_from_text(MANIFEST.format(permissions="")) == Permissions()
    assert Permissions() == Permissions(network=False, filesystem="none")


def test_granted_permissions_are_read() -> None:
    text = MANIFEST.format(permissions='[permissions]\nnetwork = true\nfilesystem = "workdir"\n')
    assert permissions_from_text(text) == Permissions(network=True, filesystem="workdir")
    assert parse_manifest(text).permissions == Permissions(network=True, filesystem="workdir")


@pytest.mark.parametrize(("table", "error"), BAD)
def test_a_broken_rule_is_one_sentence(table: str, error: str) -> None:
    with pytest.raises(ManifestError) as caught:
        permissions_from_text(MANIFEST.format(permissions=table))
    assert caught.value.errors == [error]
    assert permissions_or_none(MANIFEST.format(permissions=table)) is None


@pytest.mark.parametrize(("table", "error"), BAD)
def test_every_reader_says_the_same_words(tmp_path: Path, table: str, error: str) -> None:
    text = MANIFEST.format(permissions=table)
    with pytest.raises(ManifestError) as contract:
        parse_manifest(text)
    with pytest.raises(PackageError) as marketplace:
        marketplace_parse(text)
    (tmp_path / "plugin.toml").write_text(text)
    with pytest.raises(ValueError) as gate:
        read_permissions(tmp_path)
    assert error in contract.value.errors
    assert error in marketplace.value.errors
    assert str(gate.value) == error


def test_every_problem_of_the_table_is_reported_together() -> None:
    table = '[permissions]\nnetwork = 1\nfilesystem = "all"\ndisk = true\n'
    with pytest.raises(ManifestError) as caught:
        permissions_from_text(MANIFEST.format(permissions=table))
    assert caught.value.errors == [
        "plugin.toml: [permissions] has an unknown key 'disk'"
        " (expected network, filesystem, hosts)",
        "plugin.toml: [permissions] network must be true or false",
        "plugin.toml: [permissions] filesystem must be one of none, workdir (got 'all')",
    ]


def test_not_toml_names_the_line() -> None:
    with pytest.raises(ManifestError) as caught:
        permissions_from_text("[permissions\n")
    assert caught.value.errors[0].startswith("plugin.toml: not valid TOML")
    assert "line 1" in caught.value.errors[0]


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"network": "yes"}, "permissions.network must be true or false, not 'yes'"),
    ({"filesystem": "all"}, "permissions.filesystem must be one of ('none', 'workdir'), not 'all'"),
])
def test_the_type_refuses_what_the_rule_refuses(kwargs: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error.replace("(", r"\(").replace(")", r"\)")):
        Permissions(**kwargs)  # type: ignore[arg-type]


def test_the_safety_gate_uses_the_contracts_type() -> None:
    from autocoder.safety import Permissions as GatePermissions

    assert GatePermissions is Permissions
