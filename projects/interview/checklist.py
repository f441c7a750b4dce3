"""The questions every interview asks, whatever the model does, and whether each is answered.

A question is a dict: {"id", "kind", "text", "help", "priority", "command", "source", "answer",
"skipped", "assumption"}; see projects/interview/__init__.py for the whole state layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autocoder.engine.spec import AUTONOMY_LEVELS
from projects.interview.commands import DEFAULT_COMMAND, command_by_key, command_name
from projects.interview.examples import examples_errors
from projects.interview.types import Question

ESSENTIAL, IMPORTANT, NICE = "essential", "important", "nice"
PRIORITIES: tuple[str, ...] = (ESSENTIAL, IMPORTANT, NICE)
PRIORITY_LABELS = {ESSENTIAL: "Essential", IMPORTANT: "Important", NICE: "Nice to have"}

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


def new_question(qid: str, kind: str, text: str, help_text: str, priority: str, *,
                 command: str = "", source: str = "checklist") -> Question:
    return {"id": qid, "kind": kind, "text": text, "help": help_text, "priority": priority,
            "command": command, "source": source, "answer": "", "skipped": False,
            "assumption": ""}


def checklist_questions(state: Mapping[str, Any]) -> list[Question]:
    """The questions every interview asks, whatever the model does: the essentials.

    Worded for people who do not program; each fills the spec field named by its kind.
    """
    questions = [new_question(
        "commands", "commands", "What tasks should it do for you?",
        "Write each task on its own line, in your own words, e.g. \u201cMake a weekly "
        "schedule\u201d or \u201cCheck a list of meetings for clashes\u201d. Most requests need "
        "only one. To pick a task's short name yourself, write the name first, then a colon: "
        "\u201cmake-schedule: make a weekly schedule\u201d.", ESSENTIAL)]
    for command in state.get("commands", []):
        questions.extend(_command_questions(command))
    questions.append(new_question(
        "autonomy", "autonomy", "How often should a person check the work while it is built?",
        "Semi-automatic suits most requests. You can change this later for each run.",
        ESSENTIAL))
    questions.append(new_question(
        "constraints", "constraints", "Is there anything it must always or never do?",
        "One rule per line, e.g. \u201cNobody works more than 5 days in a row\u201d. Leave empty "
        "if nothing comes to mind.", NICE))
    return questions


def _command_questions(command: Mapping[str, Any]) -> list[Question]:
    key, title = command["key"], command.get("name") or "this task"
    return [
        new_question(f"inputs:{key}", "inputs",
                     f"What will you give it for \u201c{title}\u201d?",
                     "One thing per line, e.g. \u201cstart date\u201d, \u201clist of "
                     "people\u201d or \u201ca spreadsheet of meetings\u201d.", ESSENTIAL,
                     command=key),
        new_question(f"outputs:{key}", "outputs",
                     f"What should you get back from \u201c{title}\u201d?",
                     "One thing per line, e.g. \u201cthe schedule, one line per day\u201d.",
                     ESSENTIAL, command=key),
        new_question(f"examples:{key}", "examples",
                     f"Show two or more real examples for \u201c{title}\u201d.",
                     "For each example: what you would give it, and exactly what you expect "
                     "back. They become the tests that prove the plugin works, so they cannot be "
                     "skipped.", ESSENTIAL, command=key),
        new_question(f"edge_cases:{key}", "edge_cases",
                     f"What should \u201c{title}\u201d do when something is missing or looks "
                     "wrong?",
                     "For example: nothing given, a missing date, a negative number, a very long "
                     "list.", IMPORTANT, command=key),
    ]


def default_assumption(question: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    """What the builder will assume when the requester skips `question` (shown, and sent on)."""
    kind, command = question["kind"], command_name(state, question.get("command", ""))
    return {
        "commands": f"It does one task, called \u201c{DEFAULT_COMMAND}\u201d, that does what "
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


def sync_questions(questions: list[Question],
                   state: Mapping[str, Any]) -> list[Question]:
    """The checklist for the current state (keeping skips), followed by the analyst's questions.

    Questions about a command that no longer exists go; analyst questions always stay.
    """
    previous = {q["id"]: q for q in questions}
    merged = []
    for fresh in checklist_questions(state):
        old = previous.get(fresh["id"])
        if old:
            fresh.update({"answer": old.get("answer", ""), "skipped": old.get("skipped", False),
                          "assumption": old.get("assumption", "")})
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


def essentials_open(questions: list[Question], state: Mapping[str, Any]) -> int:
    return sum(1 for q in questions if q["priority"] == ESSENTIAL and is_open(q, state))
