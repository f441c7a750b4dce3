"""plugin.toml read into a typed manifest (autocoder/plugins/manifest.py): every part of the
file, every problem at once, and the lenient reading of a reviewed version's file."""

from __future__ import annotations

import dataclasses

import pytest

from autocoder.plugins import (
    CommandDecl,
    InputField,
    ManifestError,
    Permissions,
    PluginManifest,
    SettingDecl,
    parse_manifest,
    read_manifest,
)

FULL = """[plugin]
name = "Expense-Report"
version = "1.02.0"
summary = "  Adds up expenses.  "
entry = "expense_report.plugin:Plugin"
category = "Finance"
tags = ["Money", "money", "month end"]
requires_python = ">=3.11"

[permissions]
network = true
filesystem = "workdir"

[runtime]
libraries = ["openpyxl"]

[[settings]]
name = "api_key"
description = "The key of your accounting system"
secret = true

[[commands]]
name = "monthly_totals"
description = "Adds up per month"
examples = [{input = {csv = "a,b"}, output = {total = 3}}]
[commands.input]
csv = { type = "table", description = "Your expenses" }
currency = { type = "choice", choices = ["EUR", "USD"], required = false }

[[commands]]
name = "ping"
"""


def test_every_part_of_the_file_is_typed() -> None:
    manifest = parse_manifest(FULL)
    assert manifest == PluginManifest(
        name="Expense-Report", version="1.2.0", summary="Adds up expenses.",
        entry="expense_report.plugin:Plugin", package="expense_report",
        permissions=Permissions(network=True, filesystem="workdir"),
        commands=(
            CommandDecl(name="monthly_totals", description="Adds up per month",
                        examples=({"input": {"csv": "a,b"}, "output": {"total": 3}},),
                        inputs=(InputField(name="csv", type="table",
                                           description="Your expenses"),
                                InputField(name="currency", type="choice",
                                           choices=("EUR", "USD"), required=False))),
            CommandDecl(name="ping"),
        ),
        settings=(SettingDecl(name="api_key", description="The key of your accounting system",
                              secret=True),),
        category="Finance", tags=("money", "month-end"), requires_python=">=3.11",
        libraries=("openpyxl==3.1.5",))
    assert manifest.network and manifest.filesystem == "workdir"
    assert manifest.normalized_name == "expense-report"
    assert manifest.command("ping") == CommandDecl(name="ping")
    assert manifest.command("nope") is None
    assert manifest.raw["settings"][0]["name"] == "api_key"


def test_the_manifest_is_frozen() -> None:
    manifest = parse_manifest(FULL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.name = "other"  # type: ignore[misc]


def test_what_the_marketplace_stores_is_unchanged() -> None:
    assert parse_manifest(FULL).as_dict() == {
        "name": "Expense-Report", "version": "1.2.0", "summary": "Adds up expenses.",
        "entry": "expense_report.plugin:Plugin", "package": "expense_report",
        "permissions": {"network": True, "filesystem": "workdir"},
        "commands": [
            {"name": "monthly_totals", "description": "Adds up per month",
             "examples": [{"input": {"csv": "a,b"}, "output": {"total": 3}}]},
            {"name": "ping", "description": "", "examples": []},
        ],
        "category": "Finance", "tags": ["money", "month-end"], "requires_python": ">=3.11",
        "libraries": ["openpyxl==3.1.5"],
    }


def test_every_problem_is_reported_at_once_in_the_files_order() -> None:
    text = """extra = 1
[plugin]
name = "-bad"
version = "1.0+local"
entry = "x"

[permissions]
network = "yes"

[runtime]
libraries = ["numpy"]

[[settings]]
name = "1st"

[[commands]]
name = "go"
[commands.input]
when = { type = "date" }
"""
    with pytest.raises(ManifestError) as caught:
        parse_manifest(text)
    errors = caught.value.errors
    assert errors[0] == ("plugin.toml: unknown table or key 'extra' (expected [plugin],"
                         " [permissions], [runtime], [[settings]], [[commands]])")
    assert errors[1].startswith("plugin.toml: [plugin] name must be 1-64 characters")
    assert errors[2] == ("plugin.toml: [plugin] version '1.0+local' has a local part (+...),"
                         " which package indexes do not accept")
    assert errors[3] == "plugin.toml: [plugin] summary is required (one paragraph of text)"
    assert errors[4] == "plugin.toml: [plugin] entry must be '<package>.plugin:Plugin' (got 'x')"
    assert errors[5] == "plugin.toml: [permissions] network must be true or false"
    assert errors[6].startswith("plugin.toml: [runtime] library 'numpy' is not in the plugin"
                                " runtime")
    assert errors[7].startswith("plugin.toml: [[settings]] #1 name must be an identifier")
    assert errors[8].startswith("plugin.toml: [commands.input] of 'go', field 'when' type must"
                                " be one of text, number, choice, table, file, boolean")
    assert len(errors) == 9


def test_without_commands_or_plugin_table() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest("")
    errors = caught.value.errors
    assert errors[0] == "plugin.toml: the [plugin] table is missing"
    assert errors[-1] == "plugin.toml: at least one [[commands]] table is required"


def test_not_toml() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest("[plugin\nname = 1\n")
    assert caught.value.errors[0].startswith("plugin.toml: not valid TOML")
    assert read_manifest("[plugin\n") is None


def test_a_reviewed_file_is_read_leniently_one_part_at_a_time() -> None:
    """A version reviewed under older rules keeps what is still readable: bad settings are
    read as none, a bad input schema as no schema, and the rest as it is."""
    text = FULL.replace('secret = true', 'secret = "yes"').replace(
        'currency = { type = "choice", choices = ["EUR", "USD"], required = false }',
        'currency = { type = "money" }')
    with pytest.raises(ManifestError):
        parse_manifest(text)
    manifest = read_manifest(text)
    assert manifest is not None
    assert manifest.settings == ()
    monthly = manifest.command("monthly_totals")
    assert monthly is not None and monthly.inputs == ()
    assert manifest.permissions == Permissions(network=True, filesystem="workdir")
    assert manifest.entry == "expense_report.plugin:Plugin"


def test_a_partial_file_still_gives_its_entry_and_commands() -> None:
    manifest = read_manifest('[plugin]\nname = "bench-echo"\nentry = "bench_echo.plugin:Plugin"\n'
                             '[[commands]]\nname = "echo"\n')
    assert manifest is not None
    assert manifest.entry == "bench_echo.plugin:Plugin"
    assert [command.name for command in manifest.commands] == ["echo"]


def test_a_setting_is_needed_unless_it_says_required_false() -> None:
    """A needed setting with no value keeps a team's tool from being called (docs/tools.md,
    "Settings still missing"); `required = false` is for one the plugin has a default for."""
    base = ('[plugin]\nname = "a"\nversion = "1.0.0"\nsummary = "A."\nentry = "a.plugin:Plugin"'
            '\n\n[[commands]]\nname = "go"\n\n[[settings]]\nname = "key"\ndescription = "K"\n')
    assert parse_manifest(base).settings[0].required is True
    assert parse_manifest(base + "required = false\n").settings[0].required is False
    with pytest.raises(ManifestError) as caught:
        parse_manifest(base + 'required = "no"\n')
    assert caught.value.errors == ["plugin.toml: setting 'key' required must be true or false"
                                   " (got 'no')"]
