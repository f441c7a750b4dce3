"""The plugin's tasks (spec "commands"): read from the "tasks" answer, looked up by key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autocoder.engine.spec import (
    MAX_COMMANDS,
    MAX_DESCRIPTION_CHARS,
    RESERVED_METHODS,
    package_name,
)
from projects.interview.describing import imperative, proposed_description
from projects.interview.naming import derive_task_name, slugify
from projects.interview.parsing import parse_lines

DEFAULT_COMMAND = "run"


def parse_commands(text: str, existing: list[dict[str, Any]],
                   request: str = "") -> tuple[list[dict[str, Any]], list[str]]:
    """Lines of the "tasks" answer -> commands, keeping what was already said about each."""
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
        errors.append(f"Please keep it to at most {MAX_COMMANDS} tasks.")
    return commands, errors


def _command_line(line: str) -> tuple[str, str]:
    head, sep, tail = line.partition(":")
    if sep and head.strip() and len(head.split()) <= 4 and tail.strip():
        return slugify(head), tail.strip()
    if len(line.split()) == 1:  # a name as typed ("count-the-visitors") stays as it is
        return slugify(line), line
    return derive_task_name(line), line


def _command_name_problem(name: str, taken: list[str]) -> str:
    if not name:
        return "Each task needs at least one letter or digit in its name."
    if package_name(name) in RESERVED_METHODS:
        return f"\u201c{name}\u201d is a reserved word; call that task something else."
    if any(package_name(name) == package_name(other) for other in taken):
        return f"Two tasks would both be called \u201c{name}\u201d; give them different names."
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


def command_name(state: Mapping[str, Any], key: str) -> str:
    command = command_by_key(state, key) if key else None
    return command["name"] if command else "this task"


def commands_text(state: Mapping[str, Any]) -> str:
    """The "tasks" answer as the requester would type it, to show it again."""
    return "\n".join(f"{c['name']}: {c['description']}" if c.get("description") else c["name"]
                     for c in state.get("commands", []))


def proposed_commands_text(request: str) -> str:
    """The one task read from the request, as the tasks answer would say it ("spending-by-
    category: Adds up how much was spent per category."), so the first page of questions shows
    what she described instead of asking her to type it again (docs/portal.md)."""
    description = proposed_description(request)[:MAX_DESCRIPTION_CHARS].strip()
    if not description:
        return ""
    return f"{derive_task_name(imperative(description))}: {description}"
