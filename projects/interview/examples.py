"""A task's examples: the form rows, their plain-words errors, the spec examples they give."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autocoder.engine.spec import MAX_EXAMPLES_PER_COMMAND
from projects.interview.fields import command_field, example_field
from projects.interview.parsing import (
    WHOLE_INPUT_NAME,
    parse_example_input,
    parse_example_output,
    parse_lines,
)
from projects.interview.samples import sample_name
from projects.interview.types import ExampleRow

MIN_EXAMPLES = 2


def examples_from_form(data: Mapping[str, Any], command_key: str) -> list[ExampleRow]:
    """The example rows posted for one command; rows left completely empty are dropped."""
    rows: list[ExampleRow] = []
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
    mismatch = names_mismatch(command)
    if mismatch:
        errors[command_field(key, "examples")] = [mismatch]
    elif len(examples) < MIN_EXAMPLES:
        have = "none yet" if not examples else f"only {len(examples)}"
        errors[command_field(key, "examples")] = [
            f"Give at least two examples for \u201c{command.get('name')}\u201d "
            f"({have}). The examples are how we check that the plugin really works."]
    elif len(examples) > MAX_EXAMPLES_PER_COMMAND:
        errors[command_field(key, "examples")] = [
            f"Please keep it to at most {MAX_EXAMPLES_PER_COMMAND} examples."]
    return errors


def parsed_examples(command: Mapping[str, Any]) -> list[dict[str, object]]:
    """The examples that parse, as spec examples (for the spec and the readable summary), with
    one input name for the command: a pasted table ("text") and an attached file ("week47")
    are the same input under the command's name for it."""
    result = []
    for example in command.get("examples", []):
        value_in, errors_in = parse_example_input(example.get("input", ""), example.get("json"))
        value_out, errors_out = parse_example_output(example.get("output", ""),
                                                     example.get("json"))
        if not errors_in and not errors_out and str(example.get("output", "")).strip():
            result.append({"input": value_in, "output": value_out})
    name = single_input_name(command, [example["input"] for example in result])
    if name:
        for example in result:
            if example["input"]:
                example["input"] = {name: next(iter(example["input"].values()))}
    return result


def single_input_name(command: Mapping[str, Any], inputs: list[dict[str, object]]) -> str:
    """The one name every example's single value goes under, when each example gives one
    value: the input the task declares ("Needs", when it is one short name), else the first
    name given (not the stand-in for a pasted value). "" otherwise."""
    given = [value for value in inputs if value]
    if not given or any(len(value) != 1 for value in given):
        return ""
    names = [next(iter(value)) for value in given]
    named = [name for name in names if name != WHOLE_INPUT_NAME]
    declared = parse_lines(str(command.get("inputs", "")))
    slug = sample_name(declared[0] + ".txt") if len(declared) == 1 and \
        len(declared[0].split()) <= 3 else ""
    return slug or (named[0] if named else names[0])


def names_mismatch(command: Mapping[str, Any]) -> str:
    """Examples of one task that give different named values ("a, b" in one, "a, c" in
    another), said in plain words; "" when they agree. A task's plugin is given the same names
    every time, so its examples must use them too (one may leave out a value another gives:
    an optional one)."""
    inputs = [value for value in (parse_example_input(e.get("input", ""), e.get("json"))[0]
                                  for e in command.get("examples", [])) if value]
    names = [frozenset(value) for value in inputs]
    if single_input_name(command, inputs) or all(a <= b or b <= a for a in names for b in names):
        return ""
    shown = "; ".join(f"example {index + 1} gives {_names(value)}"
                      for index, value in enumerate(inputs))
    return (f"The examples of \u201c{command.get('name')}\u201d give different names ({shown}). "
            "The plugin is given the same names every time: use the same names in every "
            "example (write a name and a colon on a line above pasted lines).")


def _names(value: Mapping[str, Any]) -> str:
    return ", ".join("a pasted value without a name" if name == WHOLE_INPUT_NAME else name
                     for name in sorted(value))


def example_rows(command: Mapping[str, Any]) -> list[ExampleRow]:
    """The example rows a form shows: every stored one and at least one blank to add another."""
    stored: list[ExampleRow] = command.get("examples", [])
    rows: list[ExampleRow] = [{**example, "index": i} for i, example in enumerate(stored)]
    while len(rows) < max(MIN_EXAMPLES, len(command.get("examples", [])) + 1):
        rows.append({"input": "", "output": "", "json": False, "index": len(rows)})
    return rows[:MAX_EXAMPLES_PER_COMMAND]


def input_placeholder(command: Mapping[str, Any]) -> str:
    names = parse_lines(str(command.get("inputs", "")))[:4]
    return "\n".join(f"{name}: \u2026" for name in names) or "city: Paris\ndays: 3"
