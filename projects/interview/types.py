"""The shapes of the interview's stored JSON (projects/interview/__init__.py, "State layout").

They are what the wizard writes to `Interview.questions` and the commands of `Interview.state`;
a TypedDict documents the keys without changing the JSON stored.
"""

from __future__ import annotations

from collections.abc import Mapping
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


class SystemAnswers(TypedDict):
    """One other system as typed (other_systems._system_of writes every key); each of its
    `needs` is {"name", "description", "value", "secret"} as posted."""

    name: str
    does: str
    address: str
    sample: str
    method: str
    needs: list[Mapping[str, object]]


class ServicesAnswers(TypedDict):
    """`state["services"]` as other_systems.answers_of reads it, with its defaults."""

    uses: str
    storage: bool
    systems: list[SystemAnswers]


class SpecSetting(TypedDict, total=False):
    """A setting the spec's `services` declares (other_systems.spec_services); `kind` only for
    an address nobody knew ("address")."""

    name: str
    description: str
    secret: bool
    kind: str


class SpecSystem(TypedDict):
    name: str
    does: str
    host: str | None
    address_setting: str | None
    needs: list[str]


class SpecServices(TypedDict, total=False):
    """The spec's `services` as the interview writes it (docs/engine.md, "Spec format")."""

    hosts: list[str]
    settings: list[SpecSetting]
    systems: list[SpecSystem]
    storage: bool


class SpecCommand(TypedDict):
    """One of the spec's `commands` as the interview writes it (spec_assembly._spec_command):
    each example is {"input", "output"} with the services' extras (other_systems)."""

    name: str
    description: str
    examples: list[dict[str, object]]
