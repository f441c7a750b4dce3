"""The lessons_search and lessons_bench management commands."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from autocoder.lessons.services import lesson_create, lessons_extract_from_run
from config.benchmarks.lessons_filtered import team_sizes
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
    # 5000 rows: below about 3000, PostgreSQL 18's planner rightly prefers an exact scan.
    payload = json.loads(run("lessons_bench", "--n", "5000", "--queries", "20",
                             "--embed-texts", "32", "--json"))
    assert {"n", "p50_ms", "p95_ms", "exact_p95_ms", "recall_at_10", "index_build_s",
            "embed_per_s"} <= set(payload)
    assert payload["n"] == 5000 and payload["index_used"] is True
    assert payload["recall_at_10"] >= 0.95
    assert 0 < payload["p50_ms"] <= payload["p95_ms"]
    assert payload["embed_per_s"] > 0
    with connection.cursor() as cursor:  # the scratch table is gone, the real one untouched
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'lessons_bench%'")
        assert cursor.fetchone()[0] == 0


def test_lessons_bench_rejects_bad_sizes():
    with pytest.raises(CommandError, match="--n must be at least"):
        run("lessons_bench", "--n", "5", "--json")


def test_team_sizes_span_one_lesson_to_fifty_thousand() -> None:
    sizes = team_sizes(1_000_000, 1000)
    assert sizes.sum() == 1_000_000 and sizes.min() == 1 and 49_000 <= sizes.max() <= 51_000
    assert (sizes < 100).sum() > 400 and (sizes >= 10_000).sum() < 50  # many small, few big


def test_lessons_bench_filtered_compares_the_old_server_with_the_new():
    payload = json.loads(run("lessons_bench", "--n", "4000", "--teams", "40",
                             "--queries-per-band", "5", "--halfvec", "--json"))
    new, old = payload["new_server"], payload["old_server"]
    assert new["server"].startswith("PostgreSQL 18") and "pgvector 0.8" in new["server"]
    assert isinstance(old, dict), old  # the previous wheel is a dev dependency
    assert old["server"].startswith("PostgreSQL 16") and "pgvector 0.6" in old["server"]
    assert set(new["new"]) == set(old["old"]) == set(new["halfvec"]) and "1-9" in new["new"]
    assert set(new["iterative"]) == set(new["new"])
    for name, band in new["new"].items():
        assert band["queries"] == 5 and 0.9 <= band["recall_at_10"] <= 1.0
        assert 0 < band["p50_ms"] <= band["p95_ms"]
        if name == "1000-9999":  # the one team of 1,000 lessons: through its own index
            assert band["exact_scans"] == 0
        else:  # teams under 1,000 lessons: scanned exactly, and completely
            assert band["exact_scans"] == 5 and band["recall_at_10"] == 1.0
    assert new["team_indexes"]["teams"] == payload["teams_per_band"]["1000-9999"] == 1
    assert 0 < new["team_indexes"]["mb"] < new["index_mb"]
    assert all(band["exact_scans"] == 0 for band in new["iterative"].values())
    assert 0 < new["halfvec_index_mb"] < new["index_mb"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'lessons_filt%'")
        assert cursor.fetchone()[0] == 0
