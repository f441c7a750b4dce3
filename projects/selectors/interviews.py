"""Reads of the interview wizard: what each page shows, computed from the stored raw answers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, TypedDict

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from projects.interview import (
    answers,
    checklist,
    commands,
    examples,
    fields,
    navigation,
    parsing,
    spec_assembly,
)
from projects.interview.types import Question
from projects.models import Interview


def interviews_unfinished_for_user(user: User | AnonymousUser) -> QuerySet[Interview]:
    """The requests a user began and has not started yet (to resume them)."""
    if not user.is_authenticated:
        return Interview.objects.none()
    return (Interview.objects.filter(requester=user).exclude(step=Interview.Step.STARTED)
            .select_related("team", "project").order_by("-updated_at"))


@dataclass
class QuestionView:
    """One question as a page shows it."""

    question: Question
    field: str
    answer: str
    errors: list[str]
    is_open: bool
    can_skip: bool
    assumption: str
    priority_label: str
    command: dict[str, Any] | None = None
    examples: list[dict[str, object]] = dataclass_field(default_factory=list)  # example_views
    placeholder: str = ""
    proposed: bool = False  # the answer shown is read from the request, not typed yet


@dataclass
class QuestionsPage:
    group: int
    group_count: int  # fixed for the interview: the counter never jumps
    heading: str
    questions: list[QuestionView]
    progress: navigation.Progress
    errors: dict[str, list[str]]
    can_review: bool  # every essential is covered: the summary may be opened early


def questions_page(interview: Interview, group: int,
                   errors: dict[str, list[str]] | None = None) -> QuestionsPage:
    errors = errors or {}
    groups = navigation.question_groups(interview.questions)
    count = navigation.page_count(interview.questions, analyst_done=interview.analyst_done)
    group = min(max(group, 0), count - 1)
    views = [_question_view(q, interview.state, errors, interview.request)
             for q in groups[group]]
    progress = navigation.progress(interview.questions, interview.state,
                                   analyst_done=interview.analyst_done)
    return QuestionsPage(group=group, group_count=count,
                         heading=navigation.page_heading(group), questions=views,
                         progress=progress, errors=errors,
                         can_review=progress.essentials_open == 0)


def _question_view(question: Question, state: dict[str, Any],
                   errors: dict[str, list[str]], request: str = "") -> QuestionView:
    field_name = answers.question_field(question)
    command = commands.command_by_key(state, question.get("command", ""))
    view = QuestionView(
        question=question, field=field_name, answer=answers.answer_text(question, state),
        errors=errors.get(field_name, []), is_open=checklist.is_open(question, state),
        can_skip=checklist.can_skip(question),
        assumption=(question.get("assumption") or checklist.default_assumption(question, state))
        if question.get("skipped") else "",
        priority_label=checklist.PRIORITY_LABELS[question["priority"]], command=command)
    if question["kind"] == "commands" and not view.answer and not question.get("skipped"):
        # She described the task a page ago: it is proposed from her words, to check.
        view.answer = commands.proposed_commands_text(request)
        view.proposed = bool(view.answer)
    if question["kind"] == "examples" and command is not None:
        view.examples = example_views(command, errors)
        view.placeholder = examples.input_placeholder(command)
    return view


def example_views(command: dict[str, Any],
                  errors: dict[str, list[str]]) -> list[dict[str, object]]:
    """The example rows of one command's form, each with its field names and errors."""
    rows = []
    for row in examples.example_rows(command):
        index, key = row["index"], command["key"]
        names = {part: fields.example_field(key, index, part)
                 for part in ("in", "out", "json", "file")}
        rows.append({**row, "number": index + 1, "fields": names,
                     "input_errors": errors.get(names["in"], []),
                     "output_errors": errors.get(names["out"], []),
                     "file_errors": errors.get(names["file"], [])})
    return rows


@dataclass
class SummaryView:
    """The readable summary (step 3) and the values of its edit form."""

    spec: dict[str, Any]
    assumptions: list[str]
    errors: dict[str, list[str]]
    commands: list[dict[str, Any]]
    answered: list[Question]
    autonomy_label: str
    ready: bool
    problems: dict[str, list[str]]  # what stops it from starting, whether shown as errors or not
    rules: list[str]  # the requester's rules and the analyst's answered questions


def summary_view(interview: Interview,
                 errors: dict[str, list[str]] | None = None) -> SummaryView:
    assembly = spec_assembly.assemble(interview.request, interview.state, interview.questions)
    shown = errors if errors is not None else {}
    views = []
    for command, spec_command in zip(interview.state.get("commands", []),
                                     assembly.spec["commands"], strict=False):
        views.append({
            "state": command, "spec": spec_command,
            "fields": {part: fields.command_field(command["key"], part)
                       for part in (*answers.SUMMARY_COMMAND_PARTS, "examples")},
            "inputs": parsing.parse_lines(str(command.get("inputs", ""))),
            "outputs": parsing.parse_lines(str(command.get("outputs", ""))),
            "examples": [_readable_example(ex) for ex in spec_command["examples"]],
            "example_rows": example_views(command, shown),
            "placeholder": examples.input_placeholder(command),
            "errors": {part: shown.get(fields.command_field(command["key"], part), [])
                       for part in (*answers.SUMMARY_COMMAND_PARTS, "examples")},
        })
    answered = [q for q in interview.questions
                if q.get("source") == "analyst" and str(q.get("answer", "")).strip()]
    autonomy = interview.state.get("autonomy") or checklist.RECOMMENDED_AUTONOMY
    return SummaryView(spec=assembly.spec, assumptions=assembly.assumptions, errors=shown,
                       commands=views, answered=answered,
                       autonomy_label=checklist.AUTONOMY_LABELS.get(autonomy, autonomy),
                       ready=not assembly.errors, problems=assembly.errors,
                       rules=[line for line in assembly.spec["constraints"]
                              if not line.startswith("Assumption: ")])


class ReadablePart(TypedDict):
    """One part of a value as the summary shows it (`readable`)."""

    name: str
    text: str
    table: list[list[str]] | None  # the rows of a pasted table, else None


def _readable_example(example: dict[str, Any]) -> dict[str, list[ReadablePart]]:
    return {"input": readable(example["input"], named=True),
            "output": readable(example["output"], named=isinstance(example["output"], dict))}


def readable(value: Any, *, named: bool) -> list[ReadablePart]:
    """A value as the summary shows it: short named values together as "name: value" lines, and
    each value of several lines (a pasted table, list or text) on its own, a table as a table.

    Each part is {"name", "text", "table"}; `table` holds the rows of a table, else None.
    """
    items = list(value.items()) if named else [("", value)]
    if named and not items:
        return [{"name": "", "text": "(nothing)", "table": None}]
    parts: list[ReadablePart] = []
    short: list[str] = []
    for name, item in items:
        if isinstance(item, str) and "\n" in item.strip():
            parts.append({"name": name, "text": item, "table": parsing.table_rows(item)})
        else:
            short.append(f"{name}: {_inline(item)}" if name else _inline(item))
    if short:
        parts.insert(0, {"name": "", "text": "\n".join(short), "table": None})
    return parts


def _inline(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
