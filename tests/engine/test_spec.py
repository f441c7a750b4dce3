"""Spec validation: every problem is reported at once, each naming its field in plain words."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from autocoder.engine.spec import (
    Spec,
    SpecError,
    package_name,
    spec_from_dict,
    spec_from_json,
)


def valid() -> dict[str, Any]:
    return {
        "name": "weekly-scheduler",
        "summary": "Spreads tasks over the days of a week.",
        "commands": [
            {"name": "generate-schedule", "description": "Assign tasks to days.",
             "examples": [{"input": {"tasks": ["a", "b"], "days": 2},
                           "output": {"monday": ["a"], "tuesday": ["b"]}}]},
            {"name": "count", "description": "Count tasks.",
             "examples": [{"input": {"tasks": []}, "output": 0},
                          {"input": {"tasks": ["x"]}, "output": [1, "one", None, True, 1.5]}]},
        ],
        "constraints": ["Weeks start on Monday."],
        "autonomy": "guided",
        "quality_threshold": 0.9,
        "max_iterations": 12,
    }


def errors_of(data: object) -> list[str]:
    with pytest.raises(SpecError) as caught:
        spec_from_dict(data)
    assert str(caught.value) == "; ".join(caught.value.errors)
    return caught.value.errors


def test_a_valid_spec_is_read_with_all_its_fields() -> None:
    spec = spec_from_dict(valid())
    assert spec.name == "weekly-scheduler" and spec.package == "weekly_scheduler"
    assert [c.name for c in spec.commands] == ["generate-schedule", "count"]
    assert spec.commands[1].examples[1].output == [1, "one", None, True, 1.5]
    assert spec.constraints == ("Weeks start on Monday.",)
    assert (spec.autonomy, spec.quality_threshold, spec.max_iterations) == ("guided", 0.9, 12)


def test_optional_fields_take_the_documented_defaults() -> None:
    data = valid()
    for key in ("constraints", "autonomy", "quality_threshold", "max_iterations"):
        del data[key]
    del data["commands"][0]["description"]
    spec = spec_from_dict(data)
    assert (spec.constraints, spec.autonomy, spec.quality_threshold, spec.max_iterations) == (
        (), "semi", 0.85, 10)
    assert spec.commands[0].description == ""


def test_as_dict_round_trips_through_spec_from_dict_and_json() -> None:
    spec = spec_from_dict(valid())
    assert spec_from_dict(spec.as_dict()) == spec
    assert spec_from_json(json.dumps(spec.as_dict())) == spec
    assert spec.as_dict() == {**valid(), "testing_strategy": "basic"}


def test_the_spec_does_not_share_mutable_data_with_its_caller() -> None:
    data = valid()
    spec = spec_from_dict(data)
    data["commands"][0]["examples"][0]["input"]["tasks"].append("sneaky")
    spec.as_dict()["commands"][0]["examples"][0]["output"]["monday"].append("sneaky")
    assert spec.commands[0].examples[0].input == {"tasks": ["a", "b"], "days": 2}
    assert spec.commands[0].examples[0].output == {"monday": ["a"], "tuesday": ["b"]}


@pytest.mark.parametrize(("name", "package"), [
    ("weekly-scheduler", "weekly_scheduler"),
    ("Weekly--Scheduler", "weekly_scheduler"),
    ("CSV_to-JSON", "csv_to_json"),
    ("a__b", "a_b"),
    ("2fa-helper", "p_2fa_helper"),
    ("class", "p_class"),
    ("-edge-", "_edge_"),
])
def test_package_name(name: str, package: str) -> None:
    assert package_name(name) == package
    assert package.isidentifier()


def test_every_problem_is_reported_at_once_naming_its_field() -> None:
    data = valid()
    data["name"] = "weekly scheduler!"
    data["summary"] = "   "
    data["commands"][0]["examples"][1:] = [{"input": [1, 2], "output": 1}]
    data["commands"][1]["name"] = "generate-schedule"
    data["autonomy"] = "yolo"
    data["quality_threshold"] = 0
    data["max_iterations"] = 51
    data["constraints"] = ["ok", 3]
    errors = errors_of(data)
    fields = [error.split(":", 1)[0] for error in errors]
    assert fields == ["name", "summary", "commands[0].examples[1].input", "commands[1].name",
                      "constraints", "autonomy", "quality_threshold", "max_iterations"]
    assert "commands[0].examples[1].input: must be a JSON object" in errors
    assert "commands[1].name: 'generate-schedule' is a duplicate of 'generate-schedule'" in errors
    assert any("guided, semi, full" in e for e in errors)


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d.pop("name"), "name: is required"),
    (lambda d: d.update(name="x" * 65), "name: must be 1-64 characters"),
    (lambda d: d.update(name="---"), "name: must be 1-64 characters"),
    (lambda d: d.update(name="json"), "name: 'json' would hide Python's own module 'json'"),
    (lambda d: d.update(name="Tests"), "name: 'Tests' would hide Python's own module 'tests'"),
    (lambda d: d.pop("summary"), "summary: is required and must be text"),
    (lambda d: d.update(commands=[]), "commands: must be a list with at least one command"),
    (lambda d: d.update(commands={"a": 1}), "commands: must be a list with at least one command"),
    (lambda d: d["commands"].append("count"), "commands[2]: must be a JSON object"),
    (lambda d: d["commands"][0].update(name="with space"), "commands[0].name: must be 1-64"),
    (lambda d: d["commands"][1].update(name="on-command"),
     "commands[1].name: 'on-command' is reserved by the plugin contract"),
    (lambda d: d["commands"][1].update(name="generate_schedule"),
     "commands[1].name: 'generate_schedule' clashes with 'generate-schedule'"),
    (lambda d: d["commands"][0].update(examples="none"), "commands[0].examples: must be a list"),
    (lambda d: d["commands"][0]["examples"].append({"input": {}}),
     "commands[0].examples[1].output: is required"),
    (lambda d: d["commands"][0]["examples"].append(["in", "out"]),
     "commands[0].examples[1]: must be a JSON object with input and output"),
    (lambda d: d["commands"][0]["examples"].append({"input": {}, "output": float("nan")}),
     "commands[0].examples[1].output: must not be NaN or infinite"),
    (lambda d: d["commands"][0]["examples"].append({"input": {1: "x"}, "output": 1}),
     "commands[0].examples[1].input: object keys must be valid text"),
    (lambda d: d["commands"][0]["examples"].append({"input": {}, "output": {1, 2}}),
     "commands[0].examples[1].output: must be JSON (got set)"),
    (lambda d: d["commands"][0]["examples"].append({"input": {"s": "\ud800"}, "output": 1}),
     "commands[0].examples[1].input: contains characters that are not valid Unicode"),
    (lambda d: d["commands"][0]["examples"][0].update(expected=1),
     "commands[0].examples[0].expected: unknown field"),
    (lambda d: d.update(max_iteration=3), "max_iteration: unknown field"),
    (lambda d: d.update(max_iterations=True), "max_iterations: must be a whole number"),
    (lambda d: d.update(max_iterations=2.0), "max_iterations: must be a whole number"),
    (lambda d: d.update(max_iterations=0), "max_iterations: must be a whole number from 1 to 50"),
    (lambda d: d.update(quality_threshold=1.01), "quality_threshold: must be a number above 0"),
    (lambda d: d.update(quality_threshold="high"), "quality_threshold: must be a number"),
    (lambda d: d.update(summary="s" * 4001), "summary: must be at most 4000 characters"),
    (lambda d: d.update(constraints="be nice"), "constraints: must be a list of texts"),
])
def test_each_rule_has_a_plain_error(change: Any, expected: str) -> None:
    data = valid()
    change(data)
    assert any(error.startswith(expected) for error in errors_of(data)), errors_of(data)


def test_a_spec_needs_at_least_one_example() -> None:
    data = valid()
    for command in data["commands"]:
        command["examples"] = []
    assert errors_of(data) == ["commands: at least one command needs an example (the examples"
                               " are the acceptance tests)"]


def test_boundaries_that_are_allowed() -> None:
    data = valid()
    data.update(name="x" * 64, quality_threshold=1, max_iterations=50)
    data["commands"][0]["examples"].append({"input": {}, "output": None})
    spec = spec_from_dict(data)
    assert spec.quality_threshold == 1.0 and isinstance(spec.quality_threshold, float)
    assert spec.commands[0].examples[-1].output is None
    assert spec_from_dict({**data, "max_iterations": 1}).max_iterations == 1


def test_not_an_object_at_all() -> None:
    assert errors_of(["name"]) == ["spec: must be a JSON object"]
    assert errors_of(None) == ["spec: must be a JSON object"]


def test_invalid_json_names_line_and_column() -> None:
    text = '{\n  "name": "x",\n  "summary": "y"\n  "commands": []\n}'
    with pytest.raises(SpecError) as caught:
        spec_from_json(text)
    assert caught.value.errors == ["line 4, column 3: not valid JSON (Expecting ',' delimiter)"]


def test_absurdly_nested_json_is_an_error_not_a_crash() -> None:
    with pytest.raises(SpecError):
        spec_from_json("[" * 100_000 + "]" * 100_000)
    deep: Any = 1
    for _ in range(200):
        deep = [deep]
    data = valid()
    data["commands"][0]["examples"][0]["output"] = deep
    assert "commands[0].examples[0].output: is nested too deeply" in errors_of(data)


def test_spec_error_is_a_value_error() -> None:
    assert issubclass(SpecError, ValueError)


def test_the_spec_is_frozen() -> None:
    spec = spec_from_dict(valid())
    with pytest.raises(AttributeError):
        spec.name = "other"  # type: ignore[misc]
    assert isinstance(spec, Spec)
    assert copy.deepcopy(spec) == spec


@pytest.mark.parametrize("change, field", [
    (lambda d: d.update(summary="a\x00b"), "summary"),
    (lambda d: d["commands"][0].update(description="\x00"), "commands[0].description"),
    (lambda d: d["commands"][1]["examples"][1].update(output=[1, "o\x00ne"]),
     "commands[1].examples[1].output[1]"),
    (lambda d: d["commands"][0]["examples"][0]["input"].update(days="\x00"),
     "commands[0].examples[0].input.days"),
    (lambda d: d.update(constraints=["ok", "\x00"]), "constraints[1]"),
])
def test_a_nul_character_is_refused_naming_its_field(change: Any, field: str) -> None:
    data = valid()
    change(data)
    assert f"{field}: contains a NUL character (\\u0000), which cannot be stored" in \
        errors_of(data)


def test_a_nul_in_a_key_or_in_json_text_is_refused_too() -> None:
    data = valid()
    data["commands"][0]["examples"][0]["input"]["da\x00ys"] = 2
    assert ("commands[0].examples[0].input: a field name contains a NUL character (\\u0000),"
            " which cannot be stored") in errors_of(data)
    text = json.dumps(valid()).replace("Spreads", "Spre\\u0000ads")
    with pytest.raises(SpecError) as caught:
        spec_from_json(text)
    assert caught.value.errors == [
        "summary: contains a NUL character (\\u0000), which cannot be stored"]
    assert all("\x00" not in error for error in caught.value.errors)
