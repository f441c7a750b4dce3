"""The shapes of the interview's stored JSON (projects/interview/__init__.py, "State layout").

They are what the wizard writes to `Interview.questions` and the commands of `Interview.state`;
a TypedDict documents the keys without changing the JSON stored.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class Question(TypedDict):
    """One question of the wizard; `new_question` writes every key but the last two, which
    asked_before adds to an analyst's question that an earlier answer already answers."""

    id: str
    kind: str
    text: str
    help: str
    priority: str
    command: str
    source: str
    answer: str
    skipped: bool
    assumption: str
    answered_from: NotRequired[str]
    before_checked: NotRequired[bool]


class ExampleRow(TypedDict, total=False):
    """One example of a task as typed: the input and result texts, and whether they are JSON;
    `index` is added only for a form's rows (examples.example_rows)."""

    input: str
    output: str
    json: bool
    index: int
