"""Settings and input schemas declared in plugin.toml (autocoder/plugins/declarations.py) and
a payload checked against them (autocoder/calling/payload.py)."""

from __future__ import annotations

import tomllib

import pytest

from autocoder.calling.payload import payload_errors
from autocoder.plugins.declarations import (
    DeclarationError,
    InputField,
    SettingDecl,
    declaration_errors,
    input_fields,
    settings_declared,
)

MANIFEST = tomllib.loads('''
[plugin]
name = "expenses"
entry = "expenses.plugin:Plugin"

[[settings]]
name = "api_base"
description = "The address of your accounting system"
secret = false

[[settings]]
name = "api_key"
description = "The key your accounting system gave you"
secret = true

[[commands]]
name = "monthly_totals"
description = "Add up expenses per month"
[commands.input]
csv = { type = "table", description = "Your expenses CSV" }
currency = { type = "choice", choices = ["EUR", "USD"], description = "Currency" }
round = { type = "boolean", required = false }
limit = { type = "number" }
note = { type = "text" }
receipt = { type = "file", required = false }

[[commands]]
name = "ping"
description = "No schema: the form uses the examples"
''')


def test_the_documented_example_parses() -> None:
    assert settings_declared(MANIFEST) == [
        SettingDecl("api_base", "The address of your accounting system", secret=False),
        SettingDecl("api_key", "The key your accounting system gave you", secret=True)]
    fields = input_fields(MANIFEST, "monthly_totals")
    assert [f.name for f in fields] == ["csv", "currency", "round", "limit", "note", "receipt"]
    assert fields[0] == InputField("csv", "table", "Your expenses CSV")
    assert fields[1].choices == ("EUR", "USD")
    assert fields[2].required is False
    assert input_fields(MANIFEST, "ping") == []
    assert declaration_errors(MANIFEST) == []


def test_a_manifest_without_declarations_has_none() -> None:
    assert settings_declared({"commands": [{"name": "x"}]}) == []
    assert input_fields({"commands": [{"name": "x"}]}, "x") == []


def test_an_unknown_command_is_a_clear_error() -> None:
    with pytest.raises(DeclarationError, match="no \\[\\[commands\\]\\] table is named 'nope'"):
        input_fields(MANIFEST, "nope")


@pytest.mark.parametrize(("settings", "message"), [
    ({"name": "1st", "description": "d"}, "name must be an identifier"),
    ({"name": "a-b", "description": "d"}, "name must be an identifier"),
    ({"name": "token"}, "setting 'token' needs a description"),
    ({"name": "token", "description": "d", "secret": "yes"}, "secret must be true or false"),
    ({"name": "token", "description": "d", "hidden": True}, "unknown key 'hidden'"),
    ("token", "[[settings]] #1 must be a table"),
])
def test_bad_settings_are_named(settings: object, message: str) -> None:
    with pytest.raises(DeclarationError) as caught:
        settings_declared({"settings": [settings]})
    assert any(message in error for error in caught.value.errors), caught.value.errors
    assert all(error.startswith("plugin.toml: ") for error in caught.value.errors)


def test_a_setting_declared_twice_is_refused() -> None:
    twice = {"settings": [{"name": "a", "description": "x"}, {"name": "a", "description": "y"}]}
    assert declaration_errors(twice) == ["plugin.toml: setting 'a' is declared twice"]


@pytest.mark.parametrize(("spec", "message"), [
    ({"type": "date"}, "type must be one of text, number, choice, table, file, boolean"),
    ({"type": "choice"}, "it needs choices = "),
    ({"type": "choice", "choices": []}, "it needs choices = "),
    ({"type": "choice", "choices": ["a", "a"]}, "lists a choice twice"),
    ({"type": "text", "choices": ["a"]}, 'only a field of type "choice" has choices'),
    ({"type": "text", "required": "no"}, "required must be true or false"),
    ({"type": "text", "default": "x"}, "unknown key 'default'"),
    ("text", "must be a table such as"),
])
def test_bad_input_fields_are_named(spec: object, message: str) -> None:
    manifest = {"commands": [{"name": "go", "input": {"field": spec}}]}
    errors = declaration_errors(manifest)
    assert any(message in error for error in errors), errors
    assert all(error.startswith("plugin.toml: [commands.input] of 'go', field 'field'")
               for error in errors)
    with pytest.raises(DeclarationError):
        input_fields(manifest, "go")


def test_payloads_are_checked_against_the_fields() -> None:
    fields = input_fields(MANIFEST, "monthly_totals")
    good = {"csv": "date,amount\n2026-01-02,3.5\n", "currency": "EUR", "limit": 10,
            "note": "", "receipt": {"name": "r.pdf", "content_base64": "JVBERi0="}}
    assert payload_errors(fields, good) == []
    bad = {"csv": [["date"]], "currency": "GBP", "round": "yes", "limit": True, "extra": 1,
           "receipt": {"name": "r.pdf"}}
    assert payload_errors(fields, bad) == [
        "extra: not an input of this command (expected csv, currency, limit, note, receipt,"
        " round)",
        "csv: must be the table as CSV text",
        "currency: must be one of EUR, USD",
        "round: must be true or false",
        "limit: must be a number",
        "note: required",
        'receipt: must be a file: {"name": "...", "content_base64": "..."}',
    ]
    assert payload_errors([], {"anything": 1}) == []
