"""Fixtures for lessons: the real MiniLM embedder loaded once per session, run summaries."""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from typing import Any

import numpy as np
import pytest

from autocoder.lessons.embedder import Embedder, get_embedder
from autocoder.lessons.models import Lesson
from autocoder.lessons.types import ReflectionNote, RunSummary
from tests.factories import TeamFactory

_run_ids = count(1000)

TRACEBACK = ('Traceback (most recent call last):\n  File "/tmp/{run}/{package}/plugin.py", '
             "line {line}, in on_command\n    {code}\n{error}")


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real all-MiniLM-L6-v2, loaded once for the whole session (a process-wide singleton)."""
    instance = get_embedder()
    vector = instance.embed(["warm up"])
    assert vector.shape == (1, 384)
    assert np.isclose(np.linalg.norm(vector[0]), 1.0, atol=1e-5)
    return instance


@pytest.fixture
def team(db: None) -> Any:
    return TeamFactory(slug="acme", name="Acme")


@pytest.fixture
def other_team(db: None) -> Any:
    return TeamFactory(slug="rival", name="Rival")


def note(error: str, failed: str, fix: str, *, iteration: int = 1, fixed: bool = True,
         reflection: str = "") -> ReflectionNote:
    return ReflectionNote(iteration=iteration, error_text=error, failed_approach=failed,
                          reflection=reflection or f"The error shows that {failed.lower()}",
                          fixed_by_next=fixed, fix_summary=fix)


@pytest.fixture
def make_summary() -> Callable[..., RunSummary]:
    def make(team_id: int, reflections: list[ReflectionNote], *, run_id: int | None = None,
             spec_name: str = "weekly-scheduler",
             spec_summary: str = "Build a weekly chore rota from everyone's availability",
             succeeded: bool = True, final_approach: str = "",
             final_iteration: int | None = 3, lessons_used: list[int] | None = None,
             ) -> RunSummary:
        return RunSummary(team_id=team_id, run_id=run_id or next(_run_ids), spec_name=spec_name,
                          spec_summary=spec_summary, succeeded=succeeded,
                          final_approach=final_approach, final_iteration=final_iteration,
                          reflections=reflections, lessons_used=lessons_used or [])

    return make


# Real-world shaped mistakes, used across the tests (the tuning pairs of DUPLICATE_SIMILARITY).
WEEKDAY_CASE_RUN1 = dict(
    error=TRACEBACK.format(run="run-1", package="weekly_scheduler", line=14,
                           code="slots = availability[day]", error="KeyError: 'Monday'"),
    failed="Looked up availability by the day name exactly as given in the payload, but the "
           "dict is keyed by lower-case names.",
    fix="Normalise day names with .strip().lower() before the lookup.")
WEEKDAY_CASE_RUN2 = dict(
    error=TRACEBACK.format(run="run-7", package="shift_planner", line=40,
                           code="shifts = table[weekday]", error="KeyError: 'Tuesday'"),
    failed="Indexed the shifts dict with the weekday exactly as it appears in the request.",
    fix="Lower-case the weekday name before indexing the dict.")
MISSING_PAYLOAD_KEY = dict(
    error=TRACEBACK.format(run="run-3", package="invoice_totals", line=9,
                           code="lines = payload['items']", error="KeyError: 'items'"),
    failed="Read payload['items'] directly although an example payload has no items key.",
    fix="Use payload.get('items', []) and raise ValueError for malformed payloads.")
DATEUTIL = dict(
    error=TRACEBACK.format(run="run-2", package="weekly_scheduler", line=3,
                           code="from dateutil import parser",
                           error="ModuleNotFoundError: No module named 'dateutil'"),
    failed="Imported dateutil.parser to parse ISO dates.",
    fix="Parse ISO dates with datetime.fromisoformat from the standard library.")
PYTZ = dict(
    error=TRACEBACK.format(run="run-4", package="tz_convert", line=2, code="import pytz",
                           error="ModuleNotFoundError: No module named 'pytz'"),
    failed="Imported pytz for time zone handling.",
    fix="Use zoneinfo.ZoneInfo from the standard library.")
JSON_DATETIME = dict(
    error=TRACEBACK.format(run="run-5", package="weekly_scheduler", line=60,
                           code="json.dumps(result)",
                           error="TypeError: Object of type datetime is not JSON serializable"),
    failed="Returned datetime objects in the output dict.",
    fix="Return dates as ISO strings with .isoformat().")


def lessons_near(base: np.ndarray, owner: Any, count: int, spread: float,
                 seed: int) -> list[Lesson]:
    """`count` lessons of `owner` (a team, or None for global ones) scattered around `base`
    (cosine about 1/sqrt(1+spread^2) to it), with random vectors instead of embedded text."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        vector = base + spread * rng.standard_normal(384) / np.sqrt(384)
        rows.append(Lesson(kind="negative", team=owner, title=f"lesson {seed}-{i}",
                           avoidance_rule="x", embedding=vector / np.linalg.norm(vector)))
    return Lesson.objects.bulk_create(rows)
