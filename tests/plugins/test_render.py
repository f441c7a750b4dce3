"""plugin.toml written from a manifest (autocoder/plugins/render.py): what parse_manifest reads
back is the manifest written, and the engine's scaffold writes the file it always wrote."""

from __future__ import annotations

import tomllib

import pytest

from autocoder.engine.scaffold import plugin_toml, scaffold_manifest
from autocoder.engine.spec import spec_from_dict
from autocoder.plugins import (
    CommandDecl,
    InputField,
    Permissions,
    PluginManifest,
    SettingDecl,
    parse_manifest,
    render_manifest,
)
from autocoder.plugins.render import toml_value

FULL = PluginManifest(
    name="expense-report", version="1.2.0", summary='Adds up "expenses".\nPer month\x7f ü.',
    entry="expense_report.plugin:Plugin", package="expense_report",
    permissions=Permissions(network=True, filesystem="workdir"),
    commands=(
        CommandDecl(name="monthly_totals", description="Adds up per month",
                    examples=({"input": {"csv": "a,b\n1,2", "rate": 1.5, "on": True,
                                         "weird key": [1, "x", {"n": -2}]},
                               "output": {"total": 3, "rows": []}},
                              {"input": {}, "output": "plain"}),
                    inputs=(InputField(name="csv", type="table", description="Your expenses"),
                            InputField(name="currency", type="choice", choices=("EUR", "USD"),
                                       required=False),
                            InputField(name="report", type="file"),
                            InputField(name="round", type="boolean", required=False),
                            InputField(name="limit", type="number", description="At most"),
                            InputField(name="note", type="text"))),
        CommandDecl(name="ping", description=""),
    ),
    settings=(SettingDecl(name="api_base", description="Where your books are"),
              SettingDecl(name="api_key", description="Your key", secret=True),
              SettingDecl(name="greeting", description="Its word", required=False)),
    category="Finance", tags=("money", "month-end"), requires_python=">=3.11",
    libraries=("openpyxl==3.1.5", "PyYAML==6.0.3"),
)


def test_parse_reads_back_what_render_wrote() -> None:
    assert parse_manifest(render_manifest(FULL)) == FULL


def test_an_optional_setting_says_so_and_a_needed_one_is_written_as_before() -> None:
    text = render_manifest(FULL)
    assert 'name = "greeting"\ndescription = "Its word"\nsecret = false\nrequired = false' in text
    settings = text.split("[[commands]]")[0]
    assert settings.count("required") == 1  # required is the default, not written


def test_render_of_a_parsed_file_is_stable() -> None:
    text = render_manifest(FULL)
    assert render_manifest(parse_manifest(text)) == text


def test_the_least_manifest_round_trips() -> None:
    least = PluginManifest(name="a", version="0.1.0", summary="A.", entry="a.plugin:Plugin",
                           package="a", commands=(CommandDecl(name="go"),))
    text = render_manifest(least)
    assert "[runtime]" not in text and "[[settings]]" not in text and "tags" not in text
    assert parse_manifest(text) == least


SPEC = {
    "name": "word-count", "summary": 'Counts "words".',
    "commands": [{"name": "count", "description": "How many words.",
                  "examples": [{"input": {"text": "a b"}, "output": {"words": 2}}]}],
}


def test_the_scaffold_writes_the_file_it_always_wrote() -> None:
    spec = spec_from_dict(SPEC)
    assert plugin_toml(spec) == (
        '[plugin]\nname = "word-count"\nversion = "0.1.0"\nsummary = "Counts \\"words\\"."\n'
        'entry = "word_count.plugin:Plugin"\n\n[permissions]\nnetwork = false\n'
        'filesystem = "none"\n\n[[commands]]\nname = "count"\n'
        'description = "How many words."\n')
    assert plugin_toml(spec, permissions=Permissions(network=True, filesystem="workdir"),
                       libraries=["openpyxl==3.1.5"]) == (
        '[plugin]\nname = "word-count"\nversion = "0.1.0"\nsummary = "Counts \\"words\\"."\n'
        'entry = "word_count.plugin:Plugin"\n\n[permissions]\nnetwork = true\n'
        'filesystem = "workdir"\n\n[runtime]\nlibraries = ["openpyxl==3.1.5"]\n\n'
        '[[commands]]\nname = "count"\ndescription = "How many words."\n')


def test_the_scaffolds_manifest_passes_the_marketplaces_parse() -> None:
    spec = spec_from_dict(SPEC)
    manifest = scaffold_manifest(spec, libraries=["openpyxl==3.1.5"])
    assert parse_manifest(plugin_toml(spec, libraries=["openpyxl==3.1.5"])) == manifest


@pytest.mark.parametrize("value", [
    "tab\tand \"quotes\" and \\ and \x7f", 0, -3, 2.5, 1e300, float("inf"), True, [], {},
    [[1, 2], {"a b": {"c": "d"}}],
])
def test_values_are_toml(value: object) -> None:
    assert tomllib.loads(f"v = {toml_value(value)}\n")["v"] == value
