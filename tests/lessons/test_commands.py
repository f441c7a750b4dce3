"""The lessons_search and lessons_bench management commands."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from autocoder.lessons.services import lesson_create, lessons_extract_from_run
from tests.lessons.conftest import DATEUTIL, WEEKDAY_CASE_RUN1, note

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("embedder")]


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_lessons_search_prints_the_best_matches_with_similarity(team, make_summary):
    weekday, dateutil = lessons_extract_from_run(summary=make_summary(
        team.pk, [note(**WEEKDAY_CASE_RUN1), note(**DATEUTIL, iteration=2)]))

    payload = json.loads(run("lessons_search", "ModuleNotFoundError: No module named 'dateutil'",
                             "--team", "acme", "--k", "2", "--json"))
    assert payload["team"] == "acme" and payload["results"][0]["id"] == dateutil.pk
    assert 0.38 <= payload["results"][0]["similarity"] <= 1.0
    assert set(payload["results"][0]) >= {"id", "kind", "title", "similarity", "reliability",
                                          "avoidance_rule", "resolution", "error_signature"}

    text = run("lessons_search", "KeyError: 'Friday' in availability[day]", "--team", "acme")
    assert text.startswith("1. [0.") and weekday.title in text
    # Without a team only global lessons are searched.
    assert json.loads(run("lessons_search", "dateutil", "--json"))["results"] == []


def test_lessons_search_errors_are_clear(team):
    with pytest.raises(CommandError, match="no team with slug 'nope'"):
        run("lessons_search", "x", "--team", "nope")
    with pytest.raises(CommandError, match="--k must be at least 1"):
        run("lessons_search", "x", "--k", "0")
    lesson_create(kind="positive", team_id=None, title="Global", avoidance_rule="Use dicts.")
    assert "No lesson is similar enough" in run("lessons_search", "ZeroDivisionError")


@pytest.mark.slow
def test_lessons_bench_small_run_reports_recall_and_latency():
    payload = json.loads(run("lessons_bench", "--n", "2000", "--queries", "20",
                             "--embed-texts", "32", "--json"))
    assert {"n", "p50_ms", "p95_ms", "exact_p95_ms", "recall_at_10", "index_build_s",
            "embed_per_s"} <= set(payload)
    assert payload["n"] == 2000 and payload["index_used"] is True
    assert payload["recall_at_10"] >= 0.95
    assert 0 < payload["p50_ms"] <= payload["p95_ms"]
    assert payload["embed_per_s"] > 0
    with connection.cursor() as cursor:  # the scratch table is gone, the real one untouched
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'lessons_bench%'")
        assert cursor.fetchone()[0] == 0


def test_lessons_bench_rejects_bad_sizes():
    with pytest.raises(CommandError, match="--n must be at least"):
        run("lessons_bench", "--n", "5", "--json")
