"""A big team's lessons get an HNSW index of their own, retrieval goes through it, and it is
dropped when the team shrinks or goes. Real PostgreSQL with pgvector, real concurrent index
builds (hence transactional tests); the thresholds are lowered so a few dozen lessons count as
a big team."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import dramatiq
import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from autocoder import heartbeat
from autocoder.lessons import team_indexes
from autocoder.lessons.models import Lesson
from autocoder.lessons.selectors import lessons_nearest
from autocoder.lessons.team_indexes import (
    index_name,
    indexes_by_team,
    team_index_build,
    team_index_ready,
    team_indexes_plan,
    team_indexes_sweep,
)
from tests.factories import TeamFactory
from tests.lessons.conftest import lessons_near

pytestmark = pytest.mark.django_db(transaction=True)

BIG = 40


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(team_indexes, "TEAM_INDEX_MIN_ROWS", BIG)
    monkeypatch.setattr(team_indexes, "TEAM_INDEX_DROP_BELOW", BIG // 2)
    yield
    # Indexes are not rows: the test database's flush leaves them, so they go here.
    with connection.cursor() as cursor:
        for index in indexes_by_team().values():
            cursor.execute(f'DROP INDEX IF EXISTS "{index.name}"')


@pytest.fixture
def base() -> np.ndarray:
    vector = np.random.default_rng(11).standard_normal(384)
    return vector / np.linalg.norm(vector)


def plan_of(query_sql: str) -> str:
    """PostgreSQL's plan for the query as retrieval sent it (same session settings)."""
    with connection.cursor() as cursor:
        cursor.execute("SET hnsw.iterative_scan = relaxed_order")
        cursor.execute(f"EXPLAIN {query_sql}")
        return "\n".join(row[0] for row in cursor.fetchall())


def test_a_big_team_is_searched_through_its_own_index(base: np.ndarray) -> None:
    big, crowd, small = (TeamFactory(slug=s, name=s) for s in ("big", "crowd", "small"))
    ours = lessons_near(base, big, 60, 0.6, seed=1)
    lessons_near(base, crowd, 120, 0.2, seed=2)  # closer to the query than any of ours
    lessons_near(base, small, 5, 0.6, seed=3)
    shared = lessons_near(base, None, 1, 0.05, seed=4)  # a global lesson, the closest of all

    # The watchdog's slow sweep plans it: both big teams need an index; the small one never.
    assert team_indexes_sweep in heartbeat.SLOW_SWEEPS
    assert team_indexes_plan().build == sorted([big.pk, crowd.pk])
    assert team_index_ready(big.pk) is False
    assert team_index_build(big.pk) is True
    assert team_index_build(big.pk) is False  # already there: nothing to do
    assert team_index_ready(big.pk) is True
    assert team_indexes_plan().build == [crowd.pk]

    # Retrieval asks the team's rows by team id, and PostgreSQL takes the team's own index
    # (seq scans are off so the planner cannot prefer them on a table this small).
    expected = sorted(ours, key=lambda lesson: -float(np.dot(lesson.embedding, base)))[:4]
    with connection.cursor() as cursor:
        cursor.execute("SET enable_seqscan = off")
    try:
        with CaptureQueriesContext(connection) as queries:
            found = lessons_nearest(team_id=big.pk, vector=base, limit=5)
        searches = [q["sql"] for q in queries.captured_queries
                    if "ORDER BY" in q["sql"] and f'"team_id" = {big.pk}' in q["sql"]
                    and "+ 0.0" not in q["sql"]]
        assert searches, "retrieval did not search the team's rows through an index"
        assert f"Index Scan using {index_name(big.pk)}" in plan_of(searches[0])
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET ALL")
    # The team's nearest and the global lesson, never the crowd's closer lessons.
    assert [s.lesson.pk for s in found] == [shared[0].pk, *[lesson.pk for lesson in expected]]


def test_an_index_goes_when_its_team_shrinks_or_is_deleted(base: np.ndarray) -> None:
    shrinking, leaving = TeamFactory(slug="shrinking"), TeamFactory(slug="leaving")
    kept = lessons_near(base, shrinking, BIG + 5, 0.5, seed=5)
    lessons_near(base, leaving, BIG, 0.5, seed=6)
    for team in (shrinking, leaving):
        assert team_index_build(team.pk) is True
    assert set(indexes_by_team()) == {shrinking.pk, leaving.pk}

    # Below the threshold but above half of it: kept, so it is not rebuilt over and over.
    Lesson.objects.filter(pk__in=[lesson.pk for lesson in kept[:10]]).delete()
    assert team_indexes_plan().dropped == []
    Lesson.objects.filter(pk__in=[lesson.pk for lesson in kept[10:30]]).delete()
    gone = leaving.pk
    leaving.delete()
    assert team_indexes_plan().dropped == sorted([shrinking.pk, gone])
    assert indexes_by_team() == {}
    # Retrieval for the shrunk team still works, by the exact scan.
    found = lessons_nearest(team_id=shrinking.pk, vector=base, limit=3)
    assert len(found) == 3
    assert {s.lesson.team_id for s in found} == {shrinking.pk}


def test_a_team_below_the_threshold_gets_no_index(base: np.ndarray) -> None:
    team = TeamFactory(slug="modest")
    lessons_near(base, team, BIG - 1, 0.5, seed=7)
    assert team_indexes_plan().build == []
    assert team_index_build(team.pk) is False
    assert indexes_by_team() == {}


def test_the_sweep_has_a_real_worker_build_the_index(base: np.ndarray, worker: Any) -> None:
    team = TeamFactory(slug="growing")
    lessons_near(base, team, BIG, 0.5, seed=8)
    assert team_indexes_sweep() == [team.pk]  # sent to the queue, built by the worker
    dramatiq.get_broker().join("default", timeout=60_000)
    assert team_index_ready(team.pk) is True
    assert team_indexes_sweep() == []  # nothing left to send
