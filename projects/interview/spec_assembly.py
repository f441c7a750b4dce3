"""The spec an interview produces (docs/engine.md, "Spec format"), and every problem with it,
in plain words next to the form field it belongs to."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autocoder.engine.spec import (
    AUTONOMY_LEVELS,
    MAX_CONSTRAINT_CHARS,
    MAX_CONSTRAINTS,
    MAX_DESCRIPTION_CHARS,
    SpecError,
    spec_from_dict,
)
from projects.interview import other_systems, schedule, testing
from projects.interview.checklist import RECOMMENDED_AUTONOMY, default_assumption, is_answered
from projects.interview.examples import examples_errors, parsed_examples
from projects.interview.fields import (
    FIELD_AUTONOMY,
    FIELD_COMMANDS,
    FIELD_CONSTRAINTS,
    FIELD_GENERAL,
    FIELD_NAME,
    FIELD_SUMMARY,
    command_field,
    example_field,
)
from projects.interview.naming import NAME_RULE, name_problem
from projects.interview.parsing import parse_example_input, parse_example_output, parse_lines
from projects.interview.types import Question, SpecCommand

_SPEC_PATH = re.compile(
    r"^commands\[(\d+)\](?:\.examples\[(\d+)\](?:\.(input|output))?|\.(\w+))?: (.*)$")


@dataclass(frozen=True)
class Assembly:
    """The spec built from an interview, and every problem with it, keyed by form field."""

    spec: dict[str, Any]
    errors: dict[str, list[str]]
    assumptions: list[str]


def assumptions(questions: list[Question], state: Mapping[str, Any]) -> list[str]:
    """The stated assumptions for skipped questions, in plain words.

    A skipped "tasks" question counts even though its assumption filled in the tasks.
    """
    result = []
    for question in questions:
        if question.get("skipped") and (question["kind"] == "commands"
                                        or not is_answered(question, state)):
            result.append(question.get("assumption") or default_assumption(question, state))
    return result


def _skipped(questions: list[Question], question_id: str) -> bool:
    return any(q["id"] == question_id and q.get("skipped") for q in questions)


def assemble(request: str, state: Mapping[str, Any],
             questions: list[Question]) -> Assembly:
    """The spec for an interview and the plain-words errors that stop it from starting."""
    errors: dict[str, list[str]] = {}
    _check_basics(state, questions, errors)
    errors.update(other_systems.services_errors(state))
    errors.update(schedule.schedule_errors(state))
    errors.update(testing.testing_errors(state))
    errors.update(testing.api_docs_errors(state))
    commands, example_rows = [], []
    extras = other_systems.example_extras(state)
    for command in state.get("commands", []):
        errors.update(_command_errors(command))
        commands.append(_spec_command(command, extras))
        example_rows.append(_example_rows(command))
    stated = assumptions(questions, state)
    constraints = _constraints(state, questions, stated)
    services = other_systems.spec_services(state)
    spec: dict[str, Any] = {
        "name": str(state.get("name", "")).strip(),
        "summary": str(state.get("summary", "")).strip() or request.strip(),
        "commands": commands,
        "constraints": constraints,
        "autonomy": state.get("autonomy") or RECOMMENDED_AUTONOMY,
        # the testing strategy, and the threshold and attempts it implies or the requester set
        **testing.spec_values(state),
    }
    if services is not None:  # a plugin that talks to nothing keeps the spec it always had
        spec["services"] = services
    runs_by_itself = schedule.spec_schedule(state, [c["name"] for c in commands])
    if runs_by_itself is not None:  # "only when I click": no schedule, as before
        spec["schedule"] = runs_by_itself
    if testing.spec_api_docs(state):
        spec["api_docs"] = testing.spec_api_docs(state)
    if len(constraints) > MAX_CONSTRAINTS:
        errors.setdefault(FIELD_CONSTRAINTS, []).append(
            f"Please keep the rules, answers and assumptions to at most {MAX_CONSTRAINTS} lines "
            f"in all (there are {len(constraints)}).")
    if not errors:
        _spec_errors(spec, state, example_rows, errors)
    return Assembly(spec=spec, errors=errors, assumptions=stated)


def _check_basics(state: Mapping[str, Any], questions: list[Question],
                  errors: dict[str, list[str]]) -> None:
    name = str(state.get("name", "")).strip()
    if not name:
        errors[FIELD_NAME] = ["Give the plugin a short name, e.g. weekly-scheduler."]
    elif name_problem(name):
        errors[FIELD_NAME] = [name_problem(name)]
    if not str(state.get("summary", "")).strip():
        errors[FIELD_SUMMARY] = ["Please say in a sentence or two what the plugin is for."]
    if not state.get("commands"):
        errors[FIELD_COMMANDS] = ["Name at least one task the plugin should do."]
    if state.get("autonomy") not in AUTONOMY_LEVELS and not _skipped(questions, "autonomy"):
        errors[FIELD_AUTONOMY] = ["Choose how often a person checks the work."]


_NAME_HELP = NAME_RULE[:1].upper() + NAME_RULE[1:] + "."


def _command_errors(command: Mapping[str, Any]) -> dict[str, list[str]]:
    errors = examples_errors(command)
    name = str(command.get("name", ""))
    if name_problem(name):
        errors[command_field(command["key"], "name")] = [
            "Give this task a short name: " + NAME_RULE + "."]
    return errors


def _spec_command(command: Mapping[str, Any], extras: Mapping[str, object]) -> SpecCommand:
    parts = [str(command.get("description", "")).strip()]
    for label, key in (("Needs", "inputs"), ("Gives back", "outputs")):
        items = parse_lines(str(command.get(key, "")))
        if items:
            parts.append(f"{label}: {'; '.join(items)}.")
    edge = " ".join(str(command.get("edge_cases", "")).split())
    if edge:
        parts.append(f"Unusual input: {edge}")
    description = "\n".join(p for p in parts if p)[:MAX_DESCRIPTION_CHARS]
    return {"name": command.get("name", ""), "description": description,
            "examples": [{**example, **extras} for example in parsed_examples(command)]}


def _example_rows(command: Mapping[str, Any]) -> list[int]:
    """Which form row each spec example came from (errors are shown on that row)."""
    rows = []
    for index, example in enumerate(command.get("examples", [])):
        value_in, errors_in = parse_example_input(example.get("input", ""), example.get("json"))
        _, errors_out = parse_example_output(example.get("output", ""), example.get("json"))
        if not errors_in and not errors_out and str(example.get("output", "")).strip():
            rows.append(index)
    return rows


def _constraints(state: Mapping[str, Any], questions: list[Question],
                 stated: list[str]) -> list[str]:
    lines = parse_lines(str(state.get("constraints", "")))
    service = other_systems.service_line(state)
    if service:
        lines.append(service)
    runs = schedule.schedule_line(state, [str(c.get("name", "")) for c in
                                          state.get("commands", [])])
    if runs:
        lines.append(runs)
    for question in questions:
        if question.get("source") == "analyst" and str(question.get("answer", "")).strip():
            lines.append(f"Q: {question['text']} A: {' '.join(question['answer'].split())}")
    lines.extend(f"Assumption: {text}" for text in stated)
    return [line[:MAX_CONSTRAINT_CHARS] for line in lines]


def _spec_errors(spec: dict[str, Any], state: Mapping[str, Any], example_rows: list[list[int]],
                 errors: dict[str, list[str]]) -> None:
    """The engine's own validation, its findings moved next to the wizard's fields."""
    try:
        spec_from_dict(spec)
    except SpecError as error:
        for message in error.errors:
            field, text = spec_error_field(message, state, example_rows)
            errors.setdefault(field, []).append(text)


def spec_error_field(message: str, state: Mapping[str, Any],
                     example_rows: list[list[int]]) -> tuple[str, str]:
    """The wizard field a spec error belongs to, and the error in plain words."""
    path, _, detail = message.partition(": ")
    if path.startswith("commands[") and (".http" in path or ".settings" in path):
        return other_systems.FIELD_SYSTEMS, plain_words(detail or message)
    match = _SPEC_PATH.match(message)
    if match:
        commands = state.get("commands", [])
        index = int(match.group(1))
        key = commands[index]["key"] if index < len(commands) else ""
        if match.group(2) is not None and index < len(example_rows):
            rows = example_rows[index]
            row = rows[int(match.group(2))] if int(match.group(2)) < len(rows) else 0
            part = "out" if match.group(3) == "output" else "in"
            return example_field(key, row, part), plain_words(match.group(5))
        if match.group(4) in ("name", "description"):
            return command_field(key, match.group(4)), plain_words(match.group(5))
        return command_field(key, "examples"), plain_words(match.group(5))
    top = path.split("[")[0].split(".")[0]
    if top == "api_docs":
        return testing.FIELD_API_DOCS, plain_words(detail or message)
    if top == "services":
        return _services_field(path, state), plain_words(detail or message)
    if top == "schedule":
        return schedule.FIELD_HOW, plain_words(detail or message)
    field = top if top in (FIELD_NAME, FIELD_SUMMARY, FIELD_AUTONOMY, FIELD_CONSTRAINTS,
                           FIELD_COMMANDS) else FIELD_GENERAL
    return field, plain_words(detail or message)


def _services_field(path: str, state: Mapping[str, Any]) -> str:
    """The services section's field a spec error about `services` belongs to."""
    systems = other_systems.read_systems(state)[0]
    match = re.match(r"services\.systems\[(\d+)\]", path)
    if match and int(match.group(1)) < len(systems):
        return other_systems.system_field(systems[int(match.group(1))].index, "name")
    known = [system for system in systems if system.rule is not None]
    if path.startswith("services.hosts") and known:
        return other_systems.system_field(known[0].index, "address")
    match = re.match(r"services\.settings\[(\d+)\]", path)
    fields = []  # in the order spec_services lists the settings
    for system in systems:
        fields += [other_systems.need_field(system.index, need.row, "name")
                   for need in system.needs]
        if system.address_setting:
            fields.append(other_systems.system_field(system.index, "address"))
    if match and int(match.group(1)) < len(fields):
        return fields[int(match.group(1))]
    return other_systems.FIELD_SYSTEMS


def plain_words(detail: str) -> str:
    """The engine's terse validation message, said the way a non-programmer would."""
    rules = (
        ("would hide Python's own module", "This name is already used by Python itself; add a "
                                           "word to it, e.g. \u201c-tool\u201d."),
        ("reserved by the plugin contract", "This name is reserved; choose another name."),
        ("is a duplicate of", "Two tasks have the same name; give them different names."),
        ("clashes with", "Two tasks end up with the same name; give them different names."),
        ("must be 1-64 characters", _NAME_HELP),
        ("must not be empty", "Please fill this in."),
        ("not valid Unicode", "Some characters here cannot be used; please retype them."),
        ("nested too deeply", "This example is nested too deeply; please simplify it."),
        ("at least one command needs an example", "Give at least two examples."),
    )
    for needle, text in rules:
        if needle in detail:
            return text
    limit = re.search(r"must be at most (\d+) characters(?: \(got (\d+)\))?", detail)
    if limit:
        return f"Please shorten this to at most {limit.group(1)} characters."
    return detail[:1].upper() + detail[1:].replace("JSON object", "set of named values") + (
        "" if detail.endswith(".") else ".")
