"""Extraction after a run: which lessons are written, merging of near-duplicates, idempotency,
the reflector's help and its failure modes, and bad input."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from autocoder.lessons.models import Lesson, LessonSource
from autocoder.lessons.selectors import lessons_retrieve
from autocoder.lessons.services import (
    LessonInputError,
    lesson_create,
    lessons_extract_from_run,
)
from autocoder.llm.types import Message
from tests.lessons.conftest import (
    DATEUTIL,
    MISSING_PAYLOAD_KEY,
    PYTZ,
    WEEKDAY_CASE_RUN1,
    WEEKDAY_CASE_RUN2,
    note,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("embedder")]


@dataclass
class Reply:
    text: str


class RecordingReflector:
    """Stands in for the LLM provider (a hosted model cannot be reached here): the same
    `.complete(messages, role=...)` shape, replies given by the test."""

    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.calls: list[tuple[list[Message], str]] = []

    def complete(self, messages: list[Message], role: str = "") -> Reply:
        self.calls.append((messages, role))
        if isinstance(self.reply, Exception):
            raise self.reply
        return Reply(self.reply)


def test_a_fixed_reflection_and_a_successful_end_become_two_lessons(team, make_summary):
    summary = make_summary(team.pk, [note(**WEEKDAY_CASE_RUN1, iteration=2)], run_id=10,
                           final_approach="Dispatch commands through a dict of handlers.",
                           final_iteration=3)
    negative, positive = lessons_extract_from_run(summary=summary)

    assert negative.kind == "negative" and positive.kind == "positive"
    assert negative.error_signature == "KeyError: <val>"
    assert "lower()" in negative.resolution and "lower()" in negative.avoidance_rule
    assert negative.failed_approach.startswith("Looked up availability")
    assert (negative.source_run_id, negative.source_iteration) == (10, 2)
    assert (positive.source_run_id, positive.source_iteration) == (10, 3)
    assert negative.team_id == team.pk and negative.retired_at is None
    assert "keyerror" in negative.tags
    assert positive.task_context.startswith("weekly-scheduler:")
    assert negative.reliability == pytest.approx(0.5)
    assert np.linalg.norm(np.asarray(negative.embedding)) == pytest.approx(1.0, abs=1e-4)


def test_only_reflections_that_led_to_a_fix_and_only_successes_teach(team, make_summary):
    unfixed = note(**DATEUTIL, fixed=False)
    failed_run = make_summary(team.pk, [unfixed], succeeded=False, final_approach="Tried X.")
    assert lessons_extract_from_run(summary=failed_run) == []
    assert not Lesson.objects.exists()


def test_the_same_mistake_in_another_run_merges_instead_of_piling_up(team, make_summary):
    first = lessons_extract_from_run(summary=make_summary(
        team.pk, [note(**WEEKDAY_CASE_RUN1)], run_id=1))
    second = lessons_extract_from_run(summary=make_summary(
        team.pk, [note(**WEEKDAY_CASE_RUN2)], run_id=2, spec_name="shift-planner",
        spec_summary="Assign shifts to staff for each day of the week"))

    assert [lesson.pk for lesson in second] == [first[0].pk]
    lesson = Lesson.objects.get()
    assert lesson.occurrences == 2
    assert lesson.source_run_id == 1  # the original wording and source stay
    assert list(LessonSource.objects.values_list("run_id", "merged")) == [(1, False), (2, True)]


@pytest.mark.parametrize("first,second", [(WEEKDAY_CASE_RUN1, MISSING_PAYLOAD_KEY),
                                          (DATEUTIL, PYTZ)], ids=["keyerror", "missing-module"])
def test_different_mistakes_with_the_same_exception_stay_apart(team, make_summary, first,
                                                               second):
    lessons_extract_from_run(summary=make_summary(team.pk, [note(**first)], run_id=1))
    lessons_extract_from_run(summary=make_summary(team.pk, [note(**second)], run_id=2))
    assert Lesson.objects.count() == 2


def test_the_same_approach_merges_but_another_approach_to_the_task_does_not(team,
                                                                            make_summary):
    lessons_extract_from_run(summary=make_summary(team.pk, [], run_id=1, final_approach=(
        "Dispatch commands through a dict of handlers and validate the payload up front; "
        "unknown commands raise ValueError.")))
    lessons_extract_from_run(summary=make_summary(
        team.pk, [], run_id=2, spec_name="shift-planner", spec_summary="Assign shifts to staff",
        final_approach=("Map command names to handler methods in a dict and raise ValueError "
                        "for unknown command names.")))
    assert Lesson.objects.count() == 1
    lessons_extract_from_run(summary=make_summary(team.pk, [], run_id=3, final_approach=(
        "Assign chores round-robin over the sorted list of people and skip days a person is "
        "unavailable.")))
    assert Lesson.objects.count() == 2


def test_teams_do_not_merge_into_each_others_lessons(team, other_team, make_summary):
    lessons_extract_from_run(summary=make_summary(team.pk, [note(**WEEKDAY_CASE_RUN1)]))
    lessons_extract_from_run(summary=make_summary(other_team.pk, [note(**WEEKDAY_CASE_RUN1)]))
    assert sorted(Lesson.objects.values_list("team_id", "occurrences")) == sorted(
        [(team.pk, 1), (other_team.pk, 1)])


def test_extracting_a_run_twice_writes_nothing_new(team, make_summary):
    reflector = RecordingReflector("not json")
    summary = make_summary(team.pk, [note(**WEEKDAY_CASE_RUN1), note(**DATEUTIL, iteration=2)],
                           final_approach="Dispatch commands through a dict of handlers.")
    first = lessons_extract_from_run(summary=summary, reflector=reflector)
    calls = len(reflector.calls)
    again = lessons_extract_from_run(summary=summary, reflector=reflector)

    assert [lesson.pk for lesson in again] == [lesson.pk for lesson in first]
    assert len(first) == 3 and Lesson.objects.count() == 3
    assert LessonSource.objects.count() == 3
    assert all(lesson.occurrences == 1 for lesson in Lesson.objects.all())
    assert len(reflector.calls) == calls == 3  # no tokens spent on the retry


def test_the_reflector_words_title_rule_and_tags(team, make_summary):
    reply = ("Here is the lesson:\n```json\n" + json.dumps({
        "title": "Normalise weekday names before lookups",
        "avoidance_rule": "Always lower-case weekday names from the request before using them "
                          "as dictionary keys.",
        "tags": ["Weekdays", "dict keys"]}) + "\n```")
    reflector = RecordingReflector(reply)
    [lesson] = lessons_extract_from_run(summary=make_summary(
        team.pk, [note(**WEEKDAY_CASE_RUN1)]), reflector=reflector)

    assert lesson.title == "Normalise weekday names before lookups"
    assert lesson.avoidance_rule.startswith("Always lower-case weekday names")
    assert lesson.tags[:2] == ["weekdays", "dict-keys"] and "keyerror" in lesson.tags
    assert lesson.resolution.startswith("Normalise day names")  # facts stay the run's own
    messages, role = reflector.calls[0]
    assert role == "reflector" and messages[0].role == "system"
    assert "KeyError: <val>" in messages[1].content and "availability" in messages[1].content


@pytest.mark.parametrize("reply", [RuntimeError("provider down"), "", "{not json",
                                   json.dumps({"title": "", "avoidance_rule": "x"}),
                                   json.dumps({"title": "t", "avoidance_rule": "r",
                                               "tags": "one"})],
                         ids=["raises", "empty", "broken-json", "empty-title", "bad-tags"])
def test_an_unusable_reflector_falls_back_to_the_deterministic_lesson(team, make_summary,
                                                                      reply):
    [lesson] = lessons_extract_from_run(summary=make_summary(
        team.pk, [note(**WEEKDAY_CASE_RUN1)]), reflector=RecordingReflector(reply))
    assert lesson.title.startswith("KeyError:")
    assert lesson.avoidance_rule.startswith('On "KeyError: <val>"')


def test_error_signatures_on_lessons_are_normalised(team, make_summary):
    [lesson] = lessons_extract_from_run(summary=make_summary(team.pk, [note(
        error=('Traceback (most recent call last):\n  File "/tmp/run-42/x/plugin.py", line 7, '
               "in on_command\nValueError: invalid literal for int() with base 10: 'abc' "
               "at 0x7f00aa"),
        failed="int() on raw input", fix="Strip and validate the number before int().")]))
    assert lesson.error_signature == (
        "ValueError: invalid literal for int() with base <n>: <val> at <addr>")


def test_empty_and_huge_texts_are_handled(team, make_summary):
    huge = "Traceback\n" + "x = compute()\n" * 50_000 + "MemoryError: " + "y" * 500_000
    lessons = lessons_extract_from_run(summary=make_summary(team.pk, [
        note(error=huge, failed="z" * 300_000, fix="Stream the input instead. " * 10_000),
        note(error="", failed="", fix="Pin the output order.", iteration=2, reflection=""),
        note(error="", failed="", fix="", iteration=3, reflection=""),  # nothing to learn
    ], final_approach="w" * 200_000))

    assert len(lessons) == 3
    for lesson in lessons:
        assert len(lesson.error_signature) <= 300 and len(lesson.title) <= 200
        assert max(len(lesson.failed_approach), len(lesson.resolution),
                   len(lesson.avoidance_rule)) <= 4000
    assert lessons[0].error_signature.startswith("MemoryError:")
    assert lessons[1].error_signature == "" and lessons[1].title.startswith("Failure:")
    assert lessons_retrieve(team_id=team.pk, query=huge, min_similarity=-1.0)
    assert lessons_retrieve(team_id=team.pk, query="") == []


def test_bad_input_gets_a_clear_error_and_writes_nothing(team, make_summary):
    with pytest.raises(LessonInputError, match="team 987654 does not exist"):
        lessons_extract_from_run(summary=make_summary(987654, [note(**WEEKDAY_CASE_RUN1)]))
    with pytest.raises(LessonInputError, match="title must not be empty"):
        lesson_create(kind="negative", team_id=team.pk, title="  ", avoidance_rule="r")
    with pytest.raises(LessonInputError, match="kind must be one of"):
        lesson_create(kind="weird", team_id=team.pk, title="t", avoidance_rule="r")
    assert not Lesson.objects.exists()
