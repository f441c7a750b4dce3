"""The wizard's pages of questions, its progress, and which page comes next."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from projects.interview.checklist import essentials_open, is_open

ANALYST_PAGE_SIZE = 3


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
