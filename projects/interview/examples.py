"""A task's examples: the form rows, their plain-words errors, the spec examples they give."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autocoder.engine.spec import MAX_EXAMPLES_PER_COMMAND
from projects.interview.fields import command_field, example_field
from projects.interview.parsing import parse_example_input, parse_example_output, parse_lines

MIN_EXAMPLES = 2


def examples_from_form(data: Mapping[str, Any], command_key: str) -> list[dict[str, Any]]:
    """The example rows posted for one command; rows left completely empty are dropped."""
    rows = []
    for index in range(MAX_EXAMPLES_PER_COMMAND + 5):
        if example_field(command_key, index, "in") not in data:
            break
        given = str(data.get(example_field(command_key, index, "in"), ""))
        result = str(data.get(example_field(command_key, index, "out"), ""))
        if given.strip() or result.strip():
            rows.append({"input": given, "output": result,
                         "json": bool(data.get(example_field(command_key, index, "json")))})
    return rows


def example_errors(command_key: str, index: int,
                   example: Mapping[str, Any]) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    _, input_errors = parse_example_input(example.get("input", ""), example.get("json", False))
    if input_errors:
        errors[example_field(command_key, index, "in")] = input_errors
    if not str(example.get("output", "")).strip():
        errors[example_field(command_key, index, "out")] = [
            f"Example {index + 1} has no result: say what should come back for this input."]
    else:
        _, output_errors = parse_example_output(example["output"], example.get("json", False))
        if output_errors:
            errors[example_field(command_key, index, "out")] = output_errors
    return errors


def examples_errors(command: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every problem with one command's examples, keyed by the field it belongs to."""
    key, examples = command["key"], command.get("examples", [])
    errors: dict[str, list[str]] = {}
    for index, example in enumerate(examples):
        errors.update(example_errors(key, index, example))
    if len(examples) < MIN_EXAMPLES:
        have = "none yet" if not examples else f"only {len(examples)}"
        errors[command_field(key, "examples")] = [
            f"Give at least two examples for \u201c{command.get('name')}\u201d "
            f"({have}). The examples are how we check that the plugin really works."]
    elif len(examples) > MAX_EXAMPLES_PER_COMMAND:
        errors[command_field(key, "examples")] = [
            f"Please keep it to at most {MAX_EXAMPLES_PER_COMMAND} examples."]
    return errors


def parsed_examples(command: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The examples that parse, as spec examples (for the spec and the readable summary)."""
    result = []
    for example in command.get("examples", []):
        value_in, errors_in = parse_example_input(example.get("input", ""), example.get("json"))
        value_out, errors_out = parse_example_output(example.get("output", ""),
                                                     example.get("json"))
        if not errors_in and not errors_out and str(example.get("output", "")).strip():
            result.append({"input": value_in, "output": value_out})
    return result


def example_rows(command: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The example rows a form shows: every stored one and at least one blank to add another."""
    rows = [dict(example, index=i) for i, example in enumerate(command.get("examples", []))]
    while len(rows) < max(MIN_EXAMPLES, len(command.get("examples", [])) + 1):
        rows.append({"input": "", "output": "", "json": False, "index": len(rows)})
    return rows[:MAX_EXAMPLES_PER_COMMAND]


def input_placeholder(command: Mapping[str, Any]) -> str:
    names = parse_lines(str(command.get("inputs", "")))[:4]
    return "\n".join(f"{name}: \u2026" for name in names) or "city: Paris\ndays: 3"
