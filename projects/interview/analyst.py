"""The analyst model's extra questions: the prompt, and reading its reply."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from autocoder.llm.types import Message
from projects.interview import other_systems, schedule, testing
from projects.interview.checklist import (
    AUTONOMY_LABELS,
    ESSENTIAL,
    IMPORTANT,
    NICE,
    default_assumption,
    new_question,
)
from projects.interview.examples import parsed_examples
from projects.interview.parsing import parse_lines
from projects.interview.types import Question

MAX_ANALYST_QUESTIONS_PER_ROUND = 5
MAX_ANALYST_ROUNDS = 3
MAX_QUESTION_CHARS = 300
ANALYST_SYSTEM = (
    "You help a person who is not a programmer describe a small Python plugin they need. "
    "A form already asks them for: the tasks, each task's inputs and outputs, at least two "
    "concrete examples per task, what to do with unusual input, whether it talks to another "
    "system (which one, its address, what the team provides), how often it runs and what "
    "period each run covers, and how autonomous the builder "
    "may be. Do not ask about those. Everything under \"Already answered on the form\" is "
    "settled: never ask it again, in other words either, and never ask for what an example "
    "already shows (a layout, a format, a column). Ask only what is still unclear and would "
    "change what gets built. Reply with ONLY a JSON list (no prose), at most 5 items, each "
    '{"question": "...", "priority": "essential" | "important" | "nice", '
    '"assumption": "what to assume if they skip it"}. Use plain words. Reply [] when nothing '
    "essential is unclear."
)
_PARTS = (("inputs", "inputs"), ("outputs", "outputs"),
          ("edge_cases", "when something is missing or looks wrong"))


def analyst_messages(request: str, state: Mapping[str, Any],
                     questions: list[Question]) -> list[Message]:
    """The analyst's messages: the request, then every answer the form holds so far (the
    tasks with their inputs, outputs and examples, the rules, how autonomous, the other
    systems, how it is tested, each question answered or skipped), which it must not ask
    again."""
    lines = [f"Request: {request.strip()}", "", "Already answered on the form (never ask these "
             "again):"]
    if str(state.get("summary", "")).strip() not in ("", request.strip()):
        lines.append(f"What it does: {' '.join(str(state['summary']).split())}")
    for command in state.get("commands", []):
        lines.append(f"Task {command['name']}: {command.get('description', '')}".rstrip())
        for part, words in _PARTS:
            if str(command.get(part, "")).strip():
                lines.append(f"  {words}: {'; '.join(parse_lines(command[part]))}")
        for example in parsed_examples(command):
            lines.append(f"  example: {json.dumps(example)}")
    lines += _settled(state, questions)
    if other_systems.talks_to_service(state) or other_systems.answers_of(state)["storage"]:
        lines += [f"{what}: {answer}" for what, answer in other_systems.summary_lines(state)]
    if schedule.answers_of(state)["how"] != "click":
        lines += [f"{what}: {answer}" for what, answer in schedule.summary_lines(state)]
    for question in questions:
        if question.get("source") == "analyst" and (question["answer"] or question["skipped"]):
            reply = question["answer"] or f"(skipped; assume: {question['assumption']})"
            lines.append(f"Asked: {question['text']} Answer: {reply}")
    return [Message(role="system", content=ANALYST_SYSTEM),
            Message(role="user", content="\n".join(lines))]


def _settled(state: Mapping[str, Any], questions: list[Question]) -> list[str]:
    """The form's other answers: the rules, how autonomous, how it is tested, the questions
    the person chose to skip (with what will be assumed)."""
    lines = []
    rules = parse_lines(str(state.get("constraints", "")))
    if rules:
        lines.append(f"Rules it must follow: {'; '.join(rules)}")
    if state.get("autonomy") in AUTONOMY_LABELS:
        lines.append(f"How autonomous the builder may be: {AUTONOMY_LABELS[state['autonomy']]}")
    if "services" in state and not other_systems.talks_to_service(state):
        lines.append("Talks to another system: no")
    if state.get("testing"):
        lines.append(f"How hard it is tested: {testing.chosen(state).label}")
    for question in questions:
        if question.get("source") != "analyst" and question.get("skipped"):
            assumed = default_assumption(question, state)
            lines.append(f"Skipped: {question['text']} (assume: {assumed})")
    return lines


def parse_analyst_questions(text: str, existing: list[Question], *,
                            round_number: int) -> list[Question]:
    """New questions from the analyst's reply; anything unparseable or repeated is ignored."""
    items = _json_list(text)
    seen = {_normal(q["text"]) for q in existing}
    questions: list[Question] = []
    for item in items:
        raw = item if isinstance(item, dict) else {"question": item}
        question_text = raw.get("question")
        if not isinstance(question_text, str) or not question_text.strip():
            continue
        question_text = " ".join(question_text.split())[:MAX_QUESTION_CHARS]
        if _normal(question_text) in seen:
            continue
        seen.add(_normal(question_text))
        question = new_question(f"a{round_number}-{len(questions) + 1}", "text", question_text,
                                "", _priority(raw.get("priority")), source="analyst")
        assumption = raw.get("assumption")
        if isinstance(assumption, str):
            question["assumption"] = " ".join(assumption.split())[:MAX_QUESTION_CHARS]
        questions.append(question)
        if len(questions) >= MAX_ANALYST_QUESTIONS_PER_ROUND:
            break
    return questions


def json_reply(text: str, kind: type[list[Any]] | type[dict[str, Any]]) -> Any:
    """The JSON list or object (`kind`) of a model's reply: bare, fenced, or amid prose;
    None when there is none."""
    text = re.sub(r"```[a-zA-Z]*", "", text or "").strip()
    candidates = [text]
    start, end = text.find("[" if kind is list else "{"), text.rfind("]" if kind is list else "}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, kind):
            return value
    return None


def _json_list(text: str) -> list[Any]:
    found = json_reply(text, list)
    if found is not None:
        return list(found)
    # A reply cut short (streamed, stopped at the bound): the items written in full so far.
    return complete_items(re.sub(r"```[a-zA-Z]*", "", text or "").strip())


def complete_items(text: str) -> list[Any]:
    """The top-level items of a JSON list that are complete in `text`, which may still be
    being written ("[{...}, {..." gives the first object): what the analyst has asked so far."""
    start = (text or "").find("[")
    if start < 0:
        return []
    items: list[Any] = []
    depth, in_string, escaped, item_start = 0, False, False, -1
    for index in range(start + 1, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 0:
                    _append_item(items, text[item_start:index + 1])
            continue
        if char == '"':
            in_string = True
            if depth == 0:
                item_start = index
        elif char in "{[":
            if depth == 0:
                item_start = index
            depth += 1
        elif char in "}]":
            if depth == 0:
                break  # the list's own end
            depth -= 1
            if depth == 0:
                _append_item(items, text[item_start:index + 1])
    return items


def _append_item(items: list[Any], raw: str) -> None:
    try:
        items.append(json.loads(raw))
    except (ValueError, RecursionError):
        pass


def _priority(value: object) -> str:
    text = str(value or "").strip().lower().replace("-", " ").replace("_", " ")
    if text.startswith("nice") or text in ("low", "optional"):
        return NICE
    if text in ("essential", "critical", "high", "must", "blocking"):
        return ESSENTIAL
    return IMPORTANT


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
