"""Retrieval through the public interface, on the real embedder and the real pgvector index."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from autocoder.lessons import selectors
from autocoder.lessons.embedder import embed_text
from autocoder.lessons.extraction import query_text
from autocoder.lessons.models import Lesson
from autocoder.lessons.selectors import (
    lessons_nearest,
    lessons_prompt_block,
    lessons_retrieve,
    mmr_select,
)
from autocoder.lessons.services import (
    lesson_create,
    lesson_restore,
    lesson_retire,
    lessons_extract_from_run,
    lessons_mark_retrieved,
    lessons_record_outcome,
)
from autocoder.lessons.types import RunSummary
from tests.factories import MembershipFactory, UserFactory
from tests.lessons.conftest import (
    DATEUTIL,
    JSON_DATETIME,
    TRACEBACK,
    WEEKDAY_CASE_RUN1,
    lessons_near,
    note,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("embedder")]

RUN2_WEEKDAY_ERROR = TRACEBACK.format(run="run-2", package="weekly_scheduler", line=17,
                                      code="slots = availability[day]",
                                      error="KeyError: 'Wednesday'")


def _learn_run_one(team: Any, make_summary: Callable[..., RunSummary]) -> list[Lesson]:
    reflections = [note(**WEEKDAY_CASE_RUN1, iteration=1), note(**DATEUTIL, iteration=2),
                   note(**JSON_DATETIME, iteration=3)]
    summary = make_summary(team.pk, reflections, run_id=1, final_approach=(
        "Keep a dict from command name to handler and validate the payload up front."))
    return lessons_extract_from_run(summary=summary)


def test_repeated_mistake_in_run_two_retrieves_the_lesson_of_run_one(team, make_summary):
    lessons = _learn_run_one(team, make_summary)
    weekday_lesson = next(lesson for lesson in lessons if "day" in lesson.resolution.lower())

    found = lessons_retrieve(team_id=team.pk, query=RUN2_WEEKDAY_ERROR, k=3)

    assert found, "the lesson of run 1 must come back for the same mistake in run 2"
    assert found[0].id == weekday_lesson.pk
    assert found[0].error_signature == "KeyError: <val>"
    block = lessons_prompt_block(found)
    assert weekday_lesson.avoidance_rule in block
    assert block.count("\n- ") == len(found)


def test_before_planning_a_similar_task_retrieves_the_approach_that_worked(team, make_summary):
    _learn_run_one(team, make_summary)
    found = lessons_retrieve(team_id=team.pk, k=2, query=(
        "A plugin that builds a weekly schedule of household chores from availability"))
    assert found and found[0].kind == "positive"
    assert "handler" in found[0].resolution


def test_unrelated_query_retrieves_nothing(team, make_summary):
    _learn_run_one(team, make_summary)
    assert lessons_retrieve(team_id=team.pk, query="ZeroDivisionError: division by zero") == []
    assert lessons_retrieve(team_id=team.pk, query="   ") == []
    assert lessons_retrieve(team_id=team.pk, query=RUN2_WEEKDAY_ERROR, k=0) == []


def test_another_team_never_retrieves_our_lessons(team, other_team, make_summary):
    _learn_run_one(team, make_summary)
    assert lessons_retrieve(team_id=other_team.pk, query=RUN2_WEEKDAY_ERROR,
                            min_similarity=-1.0, k=10) == []
    shared = lesson_create(kind="negative", team_id=None, title="Weekday names differ in case",
                           avoidance_rule="Lower-case weekday names before dict lookups.",
                           error_text="KeyError: 'Friday'")
    theirs = lessons_retrieve(team_id=other_team.pk, query=RUN2_WEEKDAY_ERROR,
                              min_similarity=-1.0, k=10)
    assert [lesson.id for lesson in theirs] == [shared.pk]
    ours = {lesson.id for lesson in lessons_retrieve(team_id=team.pk, query=RUN2_WEEKDAY_ERROR,
                                                      min_similarity=-1.0, k=10)}
    assert shared.pk in ours and len(ours) > 1


def test_retired_lessons_are_never_retrieved(team, make_summary):
    lessons = _learn_run_one(team, make_summary)
    reviewer = UserFactory()
    MembershipFactory(team=team, user=reviewer, role="reviewer")
    for lesson in lessons:
        lesson_retire(lesson=lesson, actor=reviewer)
    assert lessons_retrieve(team_id=team.pk, query=RUN2_WEEKDAY_ERROR,
                            min_similarity=-1.0, k=10) == []
    lesson_restore(lesson=lessons[0], actor=reviewer)
    found = lessons_retrieve(team_id=team.pk, query=RUN2_WEEKDAY_ERROR, min_similarity=-1.0)
    assert [lesson.id for lesson in found] == [lessons[0].pk]


def _weekday_lessons(team_id: int) -> tuple[Lesson, Lesson, Lesson]:
    first = lesson_create(
        kind="negative", team_id=team_id, title="KeyError: weekday names arrive capitalised",
        error_text="KeyError: 'Monday'", avoidance_rule=(
            "Lower-case weekday names with .lower() before looking them up in the dict."),
        resolution="Normalise day names with .lower() before the lookup.")
    near_copy = lesson_create(
        kind="negative", team_id=team_id, title="KeyError: weekday names are capitalised",
        error_text="KeyError: 'Tuesday'", avoidance_rule=(
            "Lower-case weekday names with .lower() before looking them up in a dict."),
        resolution="Normalise the day name with .lower() before the lookup.")
    different = lesson_create(
        kind="negative", team_id=team_id, title="KeyError: a day without availability",
        error_text="KeyError: 'Sunday'", avoidance_rule=(
            "Days nobody is available are missing from the availability dict; use "
            "availability.get(day, [])."),
        resolution="Look days up with availability.get(day, []) so free days work.")
    return first, near_copy, different


CAPITALISED_DAY = ("KeyError: 'Friday': the weekday name in the request is capitalised but the "
                   "dict keys are lower-case")


def test_mmr_returns_a_different_lesson_instead_of_a_near_copy(team):
    first, near_copy, different = _weekday_lessons(team.pk)
    assert float(np.asarray(first.embedding) @ np.asarray(near_copy.embedding)) > 0.95

    found = lessons_retrieve(team_id=team.pk, query=CAPITALISED_DAY, k=2)

    ids = [lesson.id for lesson in found]
    assert len(ids) == 2 and ids[1] == different.pk
    assert ids[0] in {first.pk, near_copy.pk}
    # Ranked by relevance alone, the two near copies would have filled both places.
    candidates = lessons_nearest(team_id=team.pk, vector=embed_text(query_text(
        CAPITALISED_DAY)), limit=10)
    by_relevance = {s.lesson.pk for s in mmr_select(candidates, 2, lambda_=1.0)}
    assert by_relevance == {first.pk, near_copy.pk}


def test_a_proven_lesson_outranks_an_equally_similar_unproven_one(team):
    texts = dict(kind="negative", team_id=team.pk, title="KeyError on weekday lookup",
                 error_text="KeyError: 'Monday'",
                 avoidance_rule="Lower-case weekday names before dict lookups.")
    unproven, proven = lesson_create(**texts), lesson_create(**texts)
    for run_id in (1, 2, 3):
        lessons_record_outcome(lesson_ids=[proven.pk], helped=True, run_id=run_id)
        lessons_record_outcome(lesson_ids=[unproven.pk], helped=False, run_id=run_id)

    found = lessons_retrieve(team_id=team.pk, query=RUN2_WEEKDAY_ERROR, k=2)

    assert [lesson.id for lesson in found] == [proven.pk, unproven.pk]
    assert found[0].similarity == pytest.approx(found[1].similarity, abs=1e-4)
    assert found[0].reliability == pytest.approx(0.8)  # (3 + 1) / (3 + 0 + 2)
    assert found[1].reliability == pytest.approx(0.2)


def test_outcomes_count_once_per_run_and_retrievals_once_per_call(team):
    lesson, *_ = _weekday_lessons(team.pk)
    lessons_mark_retrieved(lesson_ids=[lesson.pk, lesson.pk])
    lessons_record_outcome(lesson_ids=[lesson.pk], helped=True, run_id=7)
    lessons_record_outcome(lesson_ids=[lesson.pk], helped=True, run_id=7)  # a retried step
    lessons_record_outcome(lesson_ids=[lesson.pk, 999_999], helped=False)  # unknown id ignored
    lesson.refresh_from_db()
    assert (lesson.retrieved_count, lesson.helped_count, lesson.not_helped_count) == (1, 1, 1)
    assert lesson.reliability == pytest.approx(0.5)


def test_record_outcome_from_a_run_summary_credits_the_lessons_it_used(team, make_summary):
    lesson, *_ = _weekday_lessons(team.pk)
    summary = make_summary(team.pk, [], run_id=55, succeeded=True, lessons_used=[lesson.pk])
    lessons_record_outcome(summary=summary)
    lessons_record_outcome(summary=summary)
    lesson.refresh_from_db()
    assert lesson.helped_count == 1


def test_a_small_team_finds_its_lessons_even_when_the_index_is_crowded(team, other_team):
    """HNSW filters after it searches: with ef_search candidates all from another team, the
    team's lesson would be lost without the exact fallback. Index scans are forced here."""
    ours = lesson_create(kind="negative", team_id=team.pk, title="Weekday case",
                         avoidance_rule="Lower-case weekday names before dict lookups.",
                         error_text="KeyError: 'Monday'")
    rng = np.random.default_rng(3)
    base = np.asarray(ours.embedding)
    crowd = []
    for i in range(400):
        vector = base + 0.3 * rng.standard_normal(384) / np.sqrt(384)
        crowd.append(Lesson(kind="negative", team=other_team, title=f"crowd {i}",
                            avoidance_rule="x", embedding=vector / np.linalg.norm(vector)))
    Lesson.objects.bulk_create(crowd)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
    found = lessons_nearest(team_id=team.pk, vector=base, limit=5)
    assert [s.lesson.pk for s in found] == [ours.pk]
    assert found[0].similarity == pytest.approx(1.0, abs=1e-4)


def test_a_team_past_the_exact_scan_size_is_searched_through_the_index(team, other_team,
                                                                      monkeypatch):
    """Small scopes are scanned exactly; a scope over EXACT_SCAN_MAX_ROWS (lowered here) goes
    through the HNSW index with iterative scans. Both give the team's nearest lessons, and
    never another team's."""
    rng = np.random.default_rng(5)
    base = rng.standard_normal(384)
    base /= np.linalg.norm(base)

    ours = lessons_near(base, team, 30, 0.5, seed=6)
    lessons_near(base, other_team, 200, 0.2, seed=7)  # closer to the query than any of ours
    expected = sorted(ours, key=lambda lesson: -float(np.dot(lesson.embedding, base)))[:5]

    def asked(limit_rows: int) -> tuple[list[int], bool]:
        monkeypatch.setattr(selectors, "EXACT_SCAN_MAX_ROWS", limit_rows)
        with CaptureQueriesContext(connection) as queries:
            found = lessons_nearest(team_id=team.pk, vector=base, limit=5)
        used_index = any("hnsw.iterative_scan" in q["sql"] for q in queries.captured_queries)
        return [s.lesson.pk for s in found], used_index

    assert asked(4000) == ([lesson.pk for lesson in expected], False)
    assert asked(10) == ([lesson.pk for lesson in expected], True)


def test_prompt_block_is_empty_without_lessons() -> None:
    assert lessons_prompt_block([]) == ""


def test_prompt_block_keeps_a_resolution_the_rule_only_begins_to_quote(team):
    lesson = lesson_create(
        kind="negative", team_id=team.pk, title="Weekday case", error_text="KeyError: 'Monday'",
        avoidance_rule='On "KeyError: <val>": Lower-case the weekday first.',
        resolution="Lower-case the weekday first. Then look it up with .get(day, []).")
    found = lessons_retrieve(team_id=team.pk, query="KeyError: 'Monday'")
    assert [f.id for f in found] == [lesson.pk]
    assert "Then look it up with .get(day, [])" in lessons_prompt_block(found)
