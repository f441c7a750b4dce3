"""Applying what was posted: the request (step 1), a page of answers (step 2), the summary
form (step 3). Whatever was typed is stored as typed, in place, even when it has errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autocoder.engine.spec import AUTONOMY_LEVELS, MAX_SUMMARY_CHARS
from projects.interview import asked_before, other_systems, schedule, testing
from projects.interview.checklist import (
    ESSENTIAL,
    can_skip,
    default_assumption,
    is_answered,
    sync_questions,
)
from projects.interview.commands import (
    command_by_key,
    commands_text,
    default_commands,
    parse_commands,
)
from projects.interview.describing import proposed_description
from projects.interview.examples import examples_errors, examples_from_form
from projects.interview.fields import (
    FIELD_AUTONOMY,
    FIELD_COMMANDS,
    FIELD_CONSTRAINTS,
    FIELD_NAME,
    FIELD_SUMMARY,
    command_field,
    example_field,
)
from projects.interview.naming import derive_plugin_name
from projects.interview.types import Question

MAX_REQUEST_CHARS = MAX_SUMMARY_CHARS
MIN_REQUEST_WORDS = 3


def new_state(request: str) -> dict[str, Any]:
    return {"name": derive_plugin_name(request), "summary": proposed_description(request),
            "autonomy": "", "constraints": "", "commands": []}


def request_errors(text: str) -> list[str]:
    if not text.strip():
        return ["Please describe what you need."]
    if len(text.split()) < MIN_REQUEST_WORDS:
        return ["Please say a little more: a sentence or two about what it should do."]
    if len(text) > MAX_REQUEST_CHARS:
        return [f"Please shorten this to at most {MAX_REQUEST_CHARS} characters "
                f"(it has {len(text)})."]
    return []


BLANK_ESSENTIAL = "Please answer this question, or choose \u201cSkip\u201d to let us assume."


def question_field(question: Mapping[str, Any]) -> str:
    """The form field that carries the answer to `question` (and its errors)."""
    kind, key = question["kind"], question.get("command", "")
    if kind in ("inputs", "outputs", "edge_cases", "examples"):
        return command_field(key, kind)
    if kind in ("commands", "autonomy", "constraints"):
        return kind
    return f"q-{question['id']}"


def apply_answers(request: str, state: dict[str, Any], questions: list[Question],
                  question_ids: list[str], data: Mapping[str, Any], *,
                  skip: str = "", require: bool = True) -> dict[str, list[str]]:
    """Store every answer posted for the questions `question_ids` (in place), and skip `skip`.

    Whatever was typed is kept even when it has errors. `require` (moving on, not back) turns
    a blank essential answer into an error, and a blank optional one into a skip.
    """
    errors: dict[str, list[str]] = {}
    for question in [q for q in questions if q["id"] in question_ids]:
        if question["id"] == skip and can_skip(question):
            _skip(request, state, question)
            continue
        problems = _apply_one(request, state, question, data)
        if problems:
            errors[question_field(question)] = problems
        elif question["kind"] == "examples":
            errors.update(examples_errors(command_by_key(state, question["command"]) or {
                "key": question["command"], "examples": []}))
    if other_systems.FIELD_USES in data:  # the other-service section of the last page
        errors.update(other_systems.apply_form(state, data))
    if schedule.FIELD_HOW in data:  # how often it runs, on the same page
        errors.update(schedule.apply_form(state, data))
    if testing.FIELD_API_DOCS in data:  # the services' API documentation, on the same page
        testing.apply_api_docs(state, data)
        errors.update(testing.api_docs_errors(state))
    if require:
        _handle_blanks(request, state, [q for q in questions if q["id"] in question_ids], errors)
    questions[:] = sync_questions(questions, state)
    asked_before.questions_answer_before(questions, state, questions)
    return errors


def _apply_one(request: str, state: dict[str, Any], question: Question,
               data: Mapping[str, Any]) -> list[str]:
    kind, field = question["kind"], question_field(question)
    if kind == "examples":
        command = command_by_key(state, question["command"])
        if command is not None:
            command["examples"] = examples_from_form(data, command["key"])
            if command["examples"]:
                question["skipped"] = False
        return []
    if field not in data:
        return []
    text = str(data.get(field, ""))
    if text.strip():
        question["skipped"] = False
        if text != question.get("answer"):
            question.pop("answered_from", None)  # her own words now
        question["answer"] = text
    if kind == "commands":
        return _apply_commands(request, state, text)
    if kind == "autonomy":
        if text and text not in AUTONOMY_LEVELS:
            return ["Choose one of the options."]
        state["autonomy"] = text or state.get("autonomy", "")
    elif kind == "constraints":
        state["constraints"] = text
    elif kind in ("inputs", "outputs", "edge_cases"):
        command = command_by_key(state, question["command"])
        if command is not None:
            command[kind] = text
    elif not text.strip():
        question["answer"] = ""
    return []


def _apply_commands(request: str, state: dict[str, Any], text: str) -> list[str]:
    drafts = state.setdefault("drafts", {})
    if not text.strip():
        return []
    commands, errors = parse_commands(text, state.get("commands", []), request)
    if errors:
        drafts[FIELD_COMMANDS] = text
        return errors
    drafts.pop(FIELD_COMMANDS, None)
    state["commands"] = commands
    return []


def _skip(request: str, state: dict[str, Any], question: Question) -> None:
    question["skipped"] = True
    question["assumption"] = default_assumption(question, state)
    if question["kind"] == "commands" and not state.get("commands"):
        state["commands"] = default_commands(request)
        state.setdefault("drafts", {}).pop(FIELD_COMMANDS, None)


def _handle_blanks(request: str, state: dict[str, Any], questions: list[Question],
                   errors: dict[str, list[str]]) -> None:
    """Blank essentials are errors; blank optional answers become skips, once all else is fine."""
    blank = [q for q in questions if not q.get("skipped") and not is_answered(q, state)
             and q["kind"] != "examples" and question_field(q) not in errors]
    for question in blank:
        if question["priority"] == ESSENTIAL:
            errors[question_field(question)] = [BLANK_ESSENTIAL]
    if not errors:
        for question in blank:
            _skip(request, state, question)


def answer_text(question: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    """What to show in the answer field: the current truth, or what was typed last."""
    kind = question["kind"]
    if kind == "commands":
        return state.get("drafts", {}).get(FIELD_COMMANDS) or commands_text(state)
    if kind in ("autonomy", "constraints"):
        return str(state.get(kind, ""))
    if kind in ("inputs", "outputs", "edge_cases"):
        command = command_by_key(state, question["command"])
        return str(command.get(kind, "")) if command else ""
    return str(question.get("answer", ""))


SUMMARY_COMMAND_PARTS = ("name", "description", "inputs", "outputs", "edge_cases")


def apply_summary(state: dict[str, Any], questions: list[Question],
                  data: Mapping[str, Any]) -> None:
    """Store the summary form as typed (in place); a changed answer is no longer a skip."""
    for field in (FIELD_NAME, FIELD_SUMMARY, FIELD_AUTONOMY, FIELD_CONSTRAINTS):
        if field in data:
            _set_unskipping(state, field, str(data[field]).strip() if field == FIELD_NAME
                            else str(data[field]), questions, field)
    for command in state.get("commands", []):
        for part in SUMMARY_COMMAND_PARTS:
            field = command_field(command["key"], part)
            if field in data:
                value = str(data[field])
                value = value.strip() if part == "name" else value
                _set_unskipping(command, part, value, questions, f"{part}:{command['key']}")
        if example_field(command["key"], 0, "in") in data:
            command["examples"] = examples_from_form(data, command["key"])
    if FIELD_AUTONOMY in data and state.get("autonomy") not in AUTONOMY_LEVELS:
        state["autonomy"] = ""
    testing.apply_form(state, data)
    questions[:] = sync_questions(questions, state)


def _set_unskipping(target: dict[str, Any], key: str, value: str,
                    questions: list[Question], question_id: str) -> None:
    if target.get(key, "") != value:
        target[key] = value
        for question in questions:
            if question["id"] == question_id and value.strip():
                question["skipped"] = False
