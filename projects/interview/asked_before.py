"""An analyst question the form already answers: the model is told never to ask again what the
form holds (projects/interview/analyst.py), and what it asks anyway is met here. Such a question
is shown answered with the words she gave before (or the examples that show it), which she may
change, instead of asking her to type it again (docs/portal.md, "The wizard")."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from projects.interview.examples import parsed_examples
from projects.interview.types import Question

# A question about how the data is laid out, which an example's input shows.
_LAYOUT = re.compile(r"\b(columns?|headers?|headings?|layout|format(?:ted)?|separat\w*|"
                     r"delimit\w*|look like|structure)\b", re.IGNORECASE)
_OUTPUT = re.compile(r"\b(results?|outputs?|back|answers?|reports?|totals?)\b", re.IGNORECASE)
_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a about all an and any are as at be been but by can could do does for from get gets give "
    "gives have how i if in into is it its me my no not of on one or our should so that the "
    "them then there these they this to us want was we were what when where whether which who "
    "will with would you your also each every just only it's there's".split())
# Enough of the question's own words in one earlier answer to say that answer answers it.
MIN_SHARED_WORDS = 2
MIN_SHARED_SHARE = 0.5


def answered_before(text: str, state: Mapping[str, Any],
                    questions: list[Question]) -> tuple[str, str]:
    """(the answer the form already gives to `text`, where it was given); ("", "") when none."""
    if _LAYOUT.search(text):
        shown = _example_part(state, "output" if _OUTPUT.search(text) else "input")
        if shown:
            return (f"As the examples show: {shown}", "by your examples")
    asked = _words(text)
    if len(asked) < MIN_SHARED_WORDS:
        return ("", "")
    for answer, where in _earlier_answers(state, questions):
        shared = asked & _words(answer)
        if len(shared) >= MIN_SHARED_WORDS and len(shared) >= MIN_SHARED_SHARE * len(asked):
            return (" ".join(answer.split()), where)
    return ("", "")


def _earlier_answers(state: Mapping[str, Any],
                     questions: list[Question]) -> list[tuple[str, str]]:
    # Rules and decisions only: what goes in and comes out name things, which a new question
    # may well name too without being answered by them.
    found = []
    for command in state.get("commands", []):
        if str(command.get("edge_cases", "")).strip():
            found.append((str(command["edge_cases"]), "by what you said it should do when "
                           "something is missing or looks wrong"))
    if str(state.get("constraints", "")).strip():
        found.append((str(state["constraints"]), "by the rules you gave"))
    for question in questions:
        if question.get("source") == "analyst" and str(question.get("answer", "")).strip():
            found.append((str(question["answer"]),
                          f"by your answer to \u201c{question['text']}\u201d"))
    return found


def _example_part(state: Mapping[str, Any], part: str) -> str:
    """The first lines of an example's input (or output), as she gave it."""
    for command in state.get("commands", []):
        if parsed_examples(command):
            lines = [line.strip() for line in str(command["examples"][0].get(part, ""))
                     .splitlines() if line.strip()]
            return " / ".join(lines[:2])[:200]
    return ""


def _words(text: str) -> set[str]:
    return {_stem(word) for word in _WORD.findall(text.lower()) if word not in _STOPWORDS}


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s"):
        if len(word) > len(ending) + 2 and word.endswith(ending):
            return word[:-len(ending)]
    return word


def questions_answer_before(new: list[Question], state: Mapping[str, Any],
                            questions: list[Question]) -> None:
    """Fill each of the analyst's questions in `new` that the form answers by now (in place):
    when they arrive, and after each page she saves, as the first round asks before she gives
    examples. Each is filled once: an answer she then clears stays hers to give."""
    for question in new:
        if question.get("source", "analyst") != "analyst" or question.get("before_checked") \
                or str(question.get("answer", "")).strip() or question.get("skipped"):
            continue
        answer, where = answered_before(question["text"], state, questions)
        if answer:
            question.update({"answer": answer, "answered_from": where, "before_checked": True})
