"""The next version of a changed plugin, from its two manifests (autocoder/plugins/versions.py):
a fix is a patch, something new a minor version, something a caller notices removed or
changed a major version."""

from __future__ import annotations

import pytest

from autocoder.plugins import parse_manifest
from autocoder.plugins.versions import bumped, next_version

BASE = '''[plugin]
name = "hours"
version = "1.0.0"
summary = "Hours."
entry = "hours.plugin:Plugin"

[[settings]]
name = "channel"
description = "The chat channel"

[[commands]]
name = "total"
[commands.input]
csv = { type = "table", description = "The hours" }
unit = { type = "choice", choices = ["h", "min"], required = false }

[[commands]]
name = "post"
'''


def bump(new_text: str) -> tuple[str, str, tuple[str, ...]]:
    found = next_version(parse_manifest(BASE), parse_manifest(new_text))
    return found.kind, found.version, found.reasons


def test_a_fix_is_a_patch() -> None:
    assert bump(BASE.replace('summary = "Hours."', 'summary = "Volunteer hours."')) == (
        "patch", "1.0.1", ())


@pytest.mark.parametrize("new, reason", [
    (BASE + '\n[[commands]]\nname = "weekly"\n', "a new command 'weekly'"),
    (BASE.replace('[[commands]]\nname = "total"',
                  '[[settings]]\nname = "token"\ndescription = "Token"\nsecret = true\n\n'
                  '[[commands]]\nname = "total"'), "a new setting 'token'"),
    (BASE.replace('required = false }', 'required = false }\nweek = { type = "number",'
                  ' required = false }'), "the command 'total' takes a new optional field 'week'"),
    (BASE.replace('["h", "min"]', '["h", "min", "days"]'),
     "the command 'total' accepts days for 'unit'"),
])
def test_something_new_is_a_minor_version(new: str, reason: str) -> None:
    assert bump(new) == ("minor", "1.1.0", (reason,))


@pytest.mark.parametrize("new, reason", [
    (BASE.replace('\n[[commands]]\nname = "post"\n', ""), "the command 'post' is removed"),
    (BASE.replace('unit = { type = "choice", choices = ["h", "min"], required = false }\n', ""),
     "the command 'total' no longer takes 'unit'"),
    (BASE.replace('type = "table"', 'type = "text"'),
     "the command 'total' takes 'csv' as text, not table"),
    (BASE.replace('required = false }', 'required = true }'), "the command 'total' now requires"
     " 'unit'"),
    (BASE.replace('["h", "min"]', '["h"]'), "the command 'total' no longer accepts min for"
     " 'unit'"),
    (BASE.replace('required = false }', 'required = false }\nweek = { type = "number" }'),
     "the command 'total' requires a new field 'week'"),
])
def test_a_change_callers_notice_is_a_major_version(new: str, reason: str) -> None:
    assert bump(new) == ("major", "2.0.0", (reason,))


def test_a_major_change_outweighs_additions_and_versions_count_up_from_any_form() -> None:
    both = BASE.replace('\n[[commands]]\nname = "post"\n', '\n[[commands]]\nname = "weekly"\n')
    assert bump(both) == ("major", "2.0.0", ("the command 'post' is removed",))
    assert bumped("0.1.0", "patch") == "0.1.1"
    assert bumped("2", "minor") == "2.1.0"
    assert bumped("1.4.2rc1", "major") == "2.0.0"
    with pytest.raises(ValueError, match="not a version"):
        bumped("banana", "patch")
