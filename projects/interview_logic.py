"""The interview wizard's rules, free of the database: the checklist, parsing what people type,
the analyst's extra questions, and turning the answers into a spec (docs/engine.md, "Spec format").

What the requester typed is kept exactly as typed (the interview's `state` holds raw text); every
read parses it again. So a half-valid answer is never lost, and the same parser produces both the
spec and the plain-words errors shown next to each field.

State layout (JSON):
    {"name", "summary", "autonomy", "constraints",
     "commands": [{"key", "name", "description", "inputs", "outputs", "edge_cases",
                   "examples": [{"input", "output", "json"}]}]}
Questions (JSON list): {"id", "kind", "text", "help", "priority", "command", "source", "answer",
                        "skipped", "assumption"}.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autocoder.engine.spec import (
    AUTONOMY_LEVELS,
    MAX_COMMANDS,
    MAX_CONSTRAINT_CHARS,
    MAX_CONSTRAINTS,
    MAX_DESCRIPTION_CHARS,
    MAX_EXAMPLES_PER_COMMAND,
    MAX_SUMMARY_CHARS,
    RESERVED_METHODS,
    SpecError,
    package_name,
    spec_from_dict,
)
from autocoder.llm.types import Message

ESSENTIAL, IMPORTANT, NICE = "essential", "important", "nice"
PRIORITIES: tuple[str, ...] = (ESSENTIAL, IMPORTANT, NICE)
PRIORITY_LABELS = {ESSENTIAL: "Essential", IMPORTANT: "Important", NICE: "Nice to have"}
MIN_EXAMPLES = 2
MAX_REQUEST_CHARS = MAX_SUMMARY_CHARS
MIN_REQUEST_WORDS = 3
MAX_ANALYST_QUESTIONS_PER_ROUND = 5
MAX_ANALYST_ROUNDS = 3
ANALYST_PAGE_SIZE = 3
MAX_QUESTION_CHARS = 300
NAME_MAX_CHARS = 40
DEFAULT_COMMAND = "run"

AUTONOMY_CHOICES: tuple[tuple[str, str, str], ...] = (
    ("guided", "Guided",
     "A person approves each important step: the plan, every big change, and publishing. "
     "Slowest, and you keep the most control."),
    ("semi", "Semi-automatic",
     "The machine works on its own, but a person approves its plan before it starts and the "
     "result before anyone can install it. A good default."),
    ("full", "Fully automatic",
     "The machine plans, writes and tests on its own and only asks a person when it is stuck. "
     "Publishing still needs a reviewer's approval."),
)
AUTONOMY_LABELS = {value: label for value, label, _ in AUTONOMY_CHOICES}
# Pre-selected in the wizard, and assumed when the question is skipped.
RECOMMENDED_AUTONOMY = "semi"

# Field names in the wizard's forms; the same keys carry errors to the field they belong to.
FIELD_NAME, FIELD_SUMMARY, FIELD_AUTONOMY, FIELD_CONSTRAINTS = (
    "name", "summary", "autonomy", "constraints")
FIELD_COMMANDS, FIELD_REQUEST, FIELD_GENERAL = "commands", "request", "general"

_FIELD_LINE = re.compile(r"^\s*([A-Za-z_][\w \-.]*?)\s*:\s*(.*?)\s*$")
_SPEC_PATH = re.compile(
    r"^commands\[(\d+)\](?:\.examples\[(\d+)\](?:\.(input|output))?|\.(\w+))?: (.*)$")
_STOPWORDS = frozenset(
    "a an and are as at be but by can could do does for from get gets give gives has have i i'd "
    "i'm in into is it its it's just like me my need needs of on or our please should so some "
    "something that the their them then there these thing this to tool plugin app program "
    "script us want wants we what when which who will with would you your".split())


# -- questions ------------------------------------------------------------------------------


def _question(qid: str, kind: str, text: str, help_text: str, priority: str, *,
              command: str = "", source: str = "checklist") -> dict[str, Any]:
    return {"id": qid, "kind": kind, "text": text, "help": help_text, "priority": priority,
            "command": command, "source": source, "answer": "", "skipped": False,
            "assumption": ""}


def checklist_questions(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The questions every interview asks, whatever the model does: the essentials."""
    questions = [_question(
        "commands", "commands", "What separate actions should it offer?",
        "One action per line, in your own words, e.g. \"Make a weekly schedule\". To choose the "
        "action's short name yourself, write it first with a colon: "
        "\"make-schedule: make a weekly schedule\".", ESSENTIAL)]
    for command in state.get("commands", []):
        questions.extend(_command_questions(command))
    questions.append(_question(
        "autonomy", "autonomy", "How much may the machine do on its own?",
        "You can change this later for each run.", ESSENTIAL))
    questions.append(_question(
        "constraints", "constraints", "Is there anything it must always or never do?",
        "One rule per line, e.g. \"Nobody works more than 5 days in a row\". Leave empty or "
        "skip if nothing comes to mind.", NICE))
    return questions


def _command_questions(command: Mapping[str, Any]) -> list[dict[str, Any]]:
    key, title = command["key"], command.get("name") or "this action"
    return [
        _question(f"inputs:{key}", "inputs", f"What information does \u201c{title}\u201d need?",
                  "One piece of information per line, e.g. \"start date\" or \"list of "
                  "people\".", ESSENTIAL, command=key),
        _question(f"outputs:{key}", "outputs", f"What should \u201c{title}\u201d give back?",
                  "One item per line, e.g. \"the schedule, one line per day\".", ESSENTIAL,
                  command=key),
        _question(f"examples:{key}", "examples",
                  f"Give at least two concrete examples for \u201c{title}\u201d.",
                  "Each example is a real input and exactly what should come back. They become "
                  "the tests that prove the plugin works, so they cannot be skipped.",
                  ESSENTIAL, command=key),
        _question(f"edge_cases:{key}", "edge_cases",
                  f"What should \u201c{title}\u201d do with unusual input?",
                  "For example: nothing given, a missing field, a negative number, a very long "
                  "list.", IMPORTANT, command=key),
    ]


def default_assumption(question: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    """What the builder will assume when the requester skips `question` (shown, and sent on)."""
    kind, command = question["kind"], _command_name(state, question.get("command", ""))
    return {
        "commands": f"It offers one action, called \u201c{DEFAULT_COMMAND}\u201d, that does what "
                    "you described.",
        "inputs": f"\u201c{command}\u201d needs exactly the information used in its examples.",
        "outputs": f"\u201c{command}\u201d gives back exactly what its examples show.",
        "edge_cases": f"\u201c{command}\u201d rejects missing or invalid input with a clear error "
                      "message instead of guessing.",
        "autonomy": "Semi-automatic: a person approves the plan and the result.",
        "constraints": "No special rules beyond the safe defaults (no network, no files).",
    }.get(kind) or question.get("assumption") or (
        "No preference: the builder chooses a sensible, simple behaviour and says so.")


def can_skip(question: Mapping[str, Any]) -> bool:
    return question["kind"] != "examples"


def sync_questions(questions: list[dict[str, Any]],
                   state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The checklist for the current state (keeping skips), followed by the analyst's questions.

    Questions about a command that no longer exists go; analyst questions always stay.
    """
    previous = {q["id"]: q for q in questions}
    merged = []
    for fresh in checklist_questions(state):
        old = previous.get(fresh["id"])
        if old:
            fresh.update(answer=old.get("answer", ""), skipped=old.get("skipped", False),
                         assumption=old.get("assumption", ""))
        merged.append(fresh)
    analyst = [q for q in questions if q.get("source") == "analyst"]
    analyst.sort(key=lambda q: PRIORITIES.index(q["priority"]))
    return merged + analyst


def is_answered(question: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
    kind = question["kind"]
    if kind == "commands":
        return bool(state.get("commands"))
    if kind == "autonomy":
        return state.get("autonomy") in AUTONOMY_LEVELS
    if kind == "constraints":
        return bool(str(state.get("constraints", "")).strip())
    if kind in ("inputs", "outputs", "edge_cases"):
        command = command_by_key(state, question["command"])
        return bool(command and str(command.get(kind, "")).strip())
    if kind == "examples":
        command = command_by_key(state, question["command"])
        return command is not None and not examples_errors(command)
    return bool(str(question.get("answer", "")).strip())


def is_open(question: Mapping[str, Any], state: Mapping[str, Any]) -> bool:
    return not question.get("skipped") and not is_answered(question, state)


def essentials_open(questions: list[dict[str, Any]], state: Mapping[str, Any]) -> int:
    return sum(1 for q in questions if q["priority"] == ESSENTIAL and is_open(q, state))


@dataclass(frozen=True)
class Progress:
    answered: int
    total: int
    essentials_open: int


def progress(questions: list[dict[str, Any]], state: Mapping[str, Any]) -> Progress:
    done = sum(1 for q in questions if not is_open(q, state))
    return Progress(answered=done, total=len(questions),
                    essentials_open=essentials_open(questions, state))


def question_groups(questions: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Questions in pages of a few: related checklist questions together, the analyst's by 3."""
    groups: dict[str, list[dict[str, Any]]] = {}
    analyst_seen = 0
    for question in questions:
        if question.get("source") == "analyst":
            name = f"analyst:{analyst_seen // ANALYST_PAGE_SIZE}"
            analyst_seen += 1
        else:
            name = _checklist_group(question)
        groups.setdefault(name, []).append(question)
    return list(groups.values())


def _checklist_group(question: Mapping[str, Any]) -> str:
    kind = question["kind"]
    if kind in ("inputs", "outputs"):
        return f"io:{question['command']}"
    if kind in ("examples", "edge_cases"):
        return f"examples:{question['command']}"
    return {"commands": "commands", "autonomy": "finish", "constraints": "finish"}[kind]


def first_open_group(questions: list[dict[str, Any]], state: Mapping[str, Any]) -> int | None:
    for index, group in enumerate(question_groups(questions)):
        if any(is_open(q, state) for q in group):
            return index
    return None


# -- parsing what people type -----------------------------------------------------------------


def parse_value(text: str) -> Any:
    """A number, list, true/false, null, object or "quoted text" as JSON; anything else as text."""
    text = text.strip()
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, float) and not math.isfinite(value):
        return text
    return value


def parse_fields(text: str) -> tuple[dict[str, Any], list[str]]:
    """`name: value` lines -> a dict, with a plain-words error for each line that is not one."""
    fields: dict[str, Any] = {}
    errors: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _FIELD_LINE.match(line)
        if match is None:
            errors.append(f"Line {number} (\u201c{_clip(line.strip())}\u201d) needs a name, a "
                          "colon and a value, like \u201ccity: Paris\u201d.")
            continue
        name, value = match.group(1), match.group(2)
        if name in fields:
            errors.append(f"\u201c{name}\u201d is given twice; give it once.")
            continue
        fields[name] = parse_value(value)
    return fields, errors


def looks_like_fields(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()]
    return bool(lines) and all(_FIELD_LINE.match(line) for line in lines)


def parse_example_input(text: str, json_mode: bool) -> tuple[dict[str, Any] | None, list[str]]:
    if not text.strip():
        return {}, []  # an action may need no information at all
    if json_mode:
        value, error = _parse_json(text)
        if error:
            return None, [error]
        if not isinstance(value, dict):
            return None, ["In JSON mode the input must be an object, written in { }."]
        return value, []
    fields, errors = parse_fields(text)
    return (None, errors) if errors else (fields, [])


def parse_example_output(text: str, json_mode: bool) -> tuple[Any, list[str]]:
    if json_mode:
        value, error = _parse_json(text)
        return (None, [error]) if error else (value, [])
    if looks_like_fields(text):
        return parse_fields(text)[0], []
    return parse_value(text), []


def _parse_json(text: str) -> tuple[Any, str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return None, (f"This is not valid JSON (line {error.lineno}, column {error.colno}): "
                      f"{error.msg}.")
    except (ValueError, RecursionError) as error:
        return None, f"This is not valid JSON: {error}."
    if isinstance(value, float) and not math.isfinite(value):
        return None, "This is not valid JSON: numbers must be finite."
    return value, ""


def parse_lines(text: str) -> list[str]:
    return [line.strip(" \t-*\u2022") for line in text.splitlines() if line.strip(" \t-*\u2022")]


def slugify(text: str, *, limit: int = NAME_MAX_CHARS) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-")


def derive_plugin_name(request: str) -> str:
    """A short name from the request: "...a weekly schedule for my team" -> weekly-schedule-team."""
    words = [w for w in re.findall(r"[a-z0-9']+", request.lower()) if w not in _STOPWORDS]
    name = slugify("-".join(words[:3])) or "my-plugin"
    return name if package_name(name) not in sys.stdlib_module_names else f"{name}-plugin"


def parse_commands(text: str, existing: list[dict[str, Any]],
                   request: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    """Lines of the "actions" answer -> commands, keeping what was already said about each."""
    by_name = {c["name"]: c for c in existing}
    used_keys = {c["key"] for c in existing}
    commands: list[dict[str, Any]] = []
    errors: list[str] = []
    for line in parse_lines(text):
        name, description = _command_line(line)
        problem = _command_name_problem(name, [c["name"] for c in commands])
        if problem:
            errors.append(problem)
            continue
        command = dict(by_name.get(name) or _new_command(used_keys, name))
        command.update(name=name, description=description or command.get("description", ""))
        used_keys.add(command["key"])
        commands.append(command)
    if len(commands) > MAX_COMMANDS:
        errors.append(f"Please keep it to at most {MAX_COMMANDS} actions.")
    return commands, errors


def _command_line(line: str) -> tuple[str, str]:
    head, sep, tail = line.partition(":")
    if sep and head.strip() and len(head.split()) <= 4 and tail.strip():
        return slugify(head), tail.strip()
    return slugify(" ".join(line.split()[:5])), line


def _command_name_problem(name: str, taken: list[str]) -> str:
    if not name:
        return "Each action needs at least one letter or digit in its name."
    if package_name(name) in RESERVED_METHODS:
        return f"\u201c{name}\u201d is a reserved word; call that action something else."
    if any(package_name(name) == package_name(other) for other in taken):
        return f"Two actions would both be called \u201c{name}\u201d; give them different names."
    return ""


def _new_command(used_keys: set[str], name: str) -> dict[str, Any]:
    number = 1
    while f"c{number}" in used_keys:
        number += 1
    return {"key": f"c{number}", "name": name, "description": "", "inputs": "", "outputs": "",
            "edge_cases": "", "examples": []}


def default_commands(request: str) -> list[dict[str, Any]]:
    command = _new_command(set(), DEFAULT_COMMAND)
    command["description"] = request[:MAX_DESCRIPTION_CHARS]
    return [command]


def command_by_key(state: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    return next((c for c in state.get("commands", []) if c["key"] == key), None)


def _command_name(state: Mapping[str, Any], key: str) -> str:
    command = command_by_key(state, key) if key else None
    return command["name"] if command else "this action"


def commands_text(state: Mapping[str, Any]) -> str:
    """The "actions" answer as the requester would type it, to show it again."""
    return "\n".join(f"{c['name']}: {c['description']}" if c.get("description") else c["name"]
                     for c in state.get("commands", []))


# -- examples ---------------------------------------------------------------------------------


def example_field(command_key: str, index: int, part: str) -> str:
    return f"ex-{command_key}-{index}-{part}"


def command_field(command_key: str, part: str) -> str:
    return f"cmd-{command_key}-{part}"


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


# -- the analyst ------------------------------------------------------------------------------

ANALYST_SYSTEM = (
    "You help a person who is not a programmer describe a small Python plugin they need. "
    "A form already asks them for: the actions, each action's inputs and outputs, at least two "
    "concrete examples per action, what to do with unusual input, and how autonomous the "
    "builder may be. Do not ask about those. Ask only what is still unclear and would change "
    "what gets built. Reply with ONLY a JSON list (no prose), at most 5 items, each "
    '{"question": "...", "priority": "essential" | "important" | "nice", '
    '"assumption": "what to assume if they skip it"}. Use plain words. Reply [] when nothing '
    "essential is unclear."
)


def analyst_messages(request: str, state: Mapping[str, Any],
                     questions: list[dict[str, Any]]) -> list[Message]:
    lines = [f"Request: {request.strip()}"]
    for command in state.get("commands", []):
        lines.append(f"Action {command['name']}: {command.get('description', '')}".rstrip())
        for part in ("inputs", "outputs", "edge_cases"):
            if str(command.get(part, "")).strip():
                lines.append(f"  {part.replace('_', ' ')}: {'; '.join(parse_lines(command[part]))}")
        for example in parsed_examples(command):
            lines.append(f"  example: {json.dumps(example)}")
    answered = [q for q in questions if q.get("source") == "analyst"]
    for question in answered:
        reply = question["answer"] or f"(skipped; assume: {question['assumption']})"
        lines.append(f"Asked: {question['text']} Answer: {reply}")
    return [Message(role="system", content=ANALYST_SYSTEM),
            Message(role="user", content="\n".join(lines))]


def parse_analyst_questions(text: str, existing: list[dict[str, Any]], *,
                            round_number: int) -> list[dict[str, Any]]:
    """New questions from the analyst's reply; anything unparseable or repeated is ignored."""
    items = _json_list(text)
    seen = {_normal(q["text"]) for q in existing}
    questions: list[dict[str, Any]] = []
    for item in items:
        raw = item if isinstance(item, dict) else {"question": item}
        question_text = raw.get("question")
        if not isinstance(question_text, str) or not question_text.strip():
            continue
        question_text = " ".join(question_text.split())[:MAX_QUESTION_CHARS]
        if _normal(question_text) in seen:
            continue
        seen.add(_normal(question_text))
        question = _question(f"a{round_number}-{len(questions) + 1}", "text", question_text,
                             "", _priority(raw.get("priority")), source="analyst")
        assumption = raw.get("assumption")
        if isinstance(assumption, str):
            question["assumption"] = " ".join(assumption.split())[:MAX_QUESTION_CHARS]
        questions.append(question)
        if len(questions) >= MAX_ANALYST_QUESTIONS_PER_ROUND:
            break
    return questions


def _json_list(text: str) -> list[Any]:
    text = re.sub(r"```[a-zA-Z]*", "", text or "").strip()
    candidates = [text]
    start, end = text.find("["), text.rfind("]")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, list):
            return value
    return []


def _priority(value: object) -> str:
    text = str(value or "").strip().lower().replace("-", " ").replace("_", " ")
    if text.startswith("nice") or text in ("low", "optional"):
        return NICE
    if text in ("essential", "critical", "high", "must", "blocking"):
        return ESSENTIAL
    return IMPORTANT


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


# -- the spec ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assembly:
    """The spec built from an interview, and every problem with it, keyed by form field."""

    spec: dict[str, Any]
    errors: dict[str, list[str]]
    assumptions: list[str]


def assumptions(questions: list[dict[str, Any]], state: Mapping[str, Any]) -> list[str]:
    """The stated assumptions for skipped questions, in plain words.

    A skipped "actions" question counts even though its assumption filled in the actions.
    """
    result = []
    for question in questions:
        if question.get("skipped") and (question["kind"] == "commands"
                                        or not is_answered(question, state)):
            result.append(question.get("assumption") or default_assumption(question, state))
    return result


def _skipped(questions: list[dict[str, Any]], question_id: str) -> bool:
    return any(q["id"] == question_id and q.get("skipped") for q in questions)


def assemble(request: str, state: Mapping[str, Any],
             questions: list[dict[str, Any]]) -> Assembly:
    """The spec for an interview and the plain-words errors that stop it from starting."""
    errors: dict[str, list[str]] = {}
    _check_basics(state, questions, errors)
    commands, example_rows = [], []
    for command in state.get("commands", []):
        errors.update(_command_errors(command))
        commands.append(_spec_command(command))
        example_rows.append(_example_rows(command))
    stated = assumptions(questions, state)
    constraints = _constraints(state, questions, stated)
    spec: dict[str, Any] = {
        "name": str(state.get("name", "")).strip(),
        "summary": str(state.get("summary", "")).strip() or request.strip(),
        "commands": commands,
        "constraints": constraints,
        "autonomy": state.get("autonomy") or RECOMMENDED_AUTONOMY,
        "quality_threshold": 0.85,
        "max_iterations": 10,
    }
    if len(constraints) > MAX_CONSTRAINTS:
        errors.setdefault(FIELD_CONSTRAINTS, []).append(
            f"Please keep the rules, answers and assumptions to at most {MAX_CONSTRAINTS} lines "
            f"in all (there are {len(constraints)}).")
    if not errors:
        _spec_errors(spec, state, example_rows, errors)
    return Assembly(spec=spec, errors=errors, assumptions=stated)


def _check_basics(state: Mapping[str, Any], questions: list[dict[str, Any]],
                  errors: dict[str, list[str]]) -> None:
    name = str(state.get("name", "")).strip()
    if not name:
        errors[FIELD_NAME] = ["Give the plugin a short name, e.g. weekly-scheduler."]
    elif not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) or not re.search(r"[A-Za-z0-9]", name):
        errors[FIELD_NAME] = [_NAME_HELP]
    if not str(state.get("summary", "")).strip():
        errors[FIELD_SUMMARY] = ["Please say in a sentence or two what the plugin is for."]
    if not state.get("commands"):
        errors[FIELD_COMMANDS] = ["Name at least one action the plugin should offer."]
    if state.get("autonomy") not in AUTONOMY_LEVELS and not _skipped(questions, "autonomy"):
        errors[FIELD_AUTONOMY] = ["Choose how much the machine may do on its own."]


_NAME_HELP = ("Use only letters, digits, dashes (-) and underscores (_), at most 64, "
              "e.g. weekly-scheduler.")


def _command_errors(command: Mapping[str, Any]) -> dict[str, list[str]]:
    errors = examples_errors(command)
    name = str(command.get("name", ""))
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) or not re.search(r"[A-Za-z0-9]", name):
        errors[command_field(command["key"], "name")] = [
            "Give this action a short name. " + _NAME_HELP]
    return errors


def _spec_command(command: Mapping[str, Any]) -> dict[str, Any]:
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
            "examples": parsed_examples(command)}


def _example_rows(command: Mapping[str, Any]) -> list[int]:
    """Which form row each spec example came from (errors are shown on that row)."""
    rows = []
    for index, example in enumerate(command.get("examples", [])):
        value_in, errors_in = parse_example_input(example.get("input", ""), example.get("json"))
        _, errors_out = parse_example_output(example.get("output", ""), example.get("json"))
        if not errors_in and not errors_out and str(example.get("output", "")).strip():
            rows.append(index)
    return rows


def _constraints(state: Mapping[str, Any], questions: list[dict[str, Any]],
                 stated: list[str]) -> list[str]:
    lines = parse_lines(str(state.get("constraints", "")))
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
    field = top if top in (FIELD_NAME, FIELD_SUMMARY, FIELD_AUTONOMY, FIELD_CONSTRAINTS,
                           FIELD_COMMANDS) else FIELD_GENERAL
    return field, plain_words(detail or message)


def plain_words(detail: str) -> str:
    """The engine's terse validation message, said the way a non-programmer would."""
    rules = (
        ("would hide Python's own module", "This name is already used by Python itself; add a "
                                           "word to it, e.g. \u201c-tool\u201d."),
        ("reserved by the plugin contract", "This name is reserved; choose another name."),
        ("is a duplicate of", "Two actions have the same name; give them different names."),
        ("clashes with", "Two actions end up with the same name; give them different names."),
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


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def new_state(request: str) -> dict[str, Any]:
    return {"name": derive_plugin_name(request), "summary": request.strip(), "autonomy": "",
            "constraints": "", "commands": []}


def request_errors(text: str) -> list[str]:
    if not text.strip():
        return ["Please describe what you need."]
    if len(text.split()) < MIN_REQUEST_WORDS:
        return ["Please say a little more: a sentence or two about what it should do."]
    if len(text) > MAX_REQUEST_CHARS:
        return [f"Please shorten this to at most {MAX_REQUEST_CHARS} characters "
                f"(it has {len(text)})."]
    return []


# -- applying what was posted -----------------------------------------------------------------

BLANK_ESSENTIAL = "Please answer this question, or choose \u201cSkip\u201d to let us assume."


def question_field(question: Mapping[str, Any]) -> str:
    """The form field that carries the answer to `question` (and its errors)."""
    kind, key = question["kind"], question.get("command", "")
    if kind in ("inputs", "outputs", "edge_cases", "examples"):
        return command_field(key, kind)
    if kind in ("commands", "autonomy", "constraints"):
        return kind
    return f"q-{question['id']}"


def apply_answers(request: str, state: dict[str, Any], questions: list[dict[str, Any]],
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
    if require:
        _handle_blanks(request, state, [q for q in questions if q["id"] in question_ids], errors)
    questions[:] = sync_questions(questions, state)
    return errors


def _apply_one(request: str, state: dict[str, Any], question: dict[str, Any],
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


def _skip(request: str, state: dict[str, Any], question: dict[str, Any]) -> None:
    question["skipped"] = True
    question["assumption"] = default_assumption(question, state)
    if question["kind"] == "commands" and not state.get("commands"):
        state["commands"] = default_commands(request)
        state.setdefault("drafts", {}).pop(FIELD_COMMANDS, None)


def _handle_blanks(request: str, state: dict[str, Any], questions: list[dict[str, Any]],
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


def apply_summary(state: dict[str, Any], questions: list[dict[str, Any]],
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
    questions[:] = sync_questions(questions, state)


def _set_unskipping(target: dict[str, Any], key: str, value: str,
                    questions: list[dict[str, Any]], question_id: str) -> None:
    if target.get(key, "") != value:
        target[key] = value
        for question in questions:
            if question["id"] == question_id and value.strip():
                question["skipped"] = False


def example_rows(command: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The example rows a form shows: every stored one and at least one blank to add another."""
    rows = [dict(example, index=i) for i, example in enumerate(command.get("examples", []))]
    while len(rows) < max(MIN_EXAMPLES, len(command.get("examples", [])) + 1):
        rows.append({"input": "", "output": "", "json": False, "index": len(rows)})
    return rows[:MAX_EXAMPLES_PER_COMMAND]


def input_placeholder(command: Mapping[str, Any]) -> str:
    names = parse_lines(str(command.get("inputs", "")))[:4]
    return "\n".join(f"{name}: \u2026" for name in names) or "city: Paris\ndays: 3"
