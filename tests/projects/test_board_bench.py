"""The board benchmark command: p50/p95 and query counts for N projects, leaving nothing behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from projects.models import Project, Team
from tests.live import child_env

pytestmark = pytest.mark.django_db
BUDGET_MS = 150


def bench(projects: int, requests: int = 30) -> dict:
    """The command in its own process, as an operator runs it (no test instrumentation of
    template rendering), on the test database."""
    done = subprocess.run(
        [sys.executable, "manage.py", "board_bench", "--projects", str(projects),
         "--requests", str(requests), "--json"],
        cwd=settings.BASE_DIR, env=child_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_bench_reports_timings_and_constant_queries_and_rolls_back() -> None:
    small, large = bench(10, requests=5), bench(500)
    assert set(large) == {"projects", "requests", "p50_ms", "p95_ms", "max_ms", "cpu_p95_ms",
                          "queries", "cards"}
    assert (small["projects"], large["projects"]) == (10, 500)
    assert small["queries"] == large["queries"]
    assert large["cards"] >= 450  # every column shows up to 100 cards
    assert 0 < large["p50_ms"] <= large["p95_ms"] <= large["max_ms"]
    assert not Project.objects.exists() and not Team.objects.filter(
        slug__startswith="board-bench").exists()


def test_board_with_500_projects_renders_within_150_ms_at_p95() -> None:
    """The budget is wall-clock p95 on a machine that is not busy with other work.

    This machine is shared (other test suites run beside this one). While the load average
    exceeds the number of cores, wall time mostly measures the scheduler: the bench is then
    repeated (up to three times) and, if the machine stays overloaded for all of them, the
    board's own CPU time per request must stay within a third of the budget instead, so that the
    page would meet it on an idle machine. Every run is printed with its load average."""
    cores = os.cpu_count() or 1
    results = []
    for _ in range(3):
        result = bench(500)
        result["load_avg"] = round(os.getloadavg()[0], 1)
        results.append(result)
        print(f"board_bench --projects 500: {result}")
        if result["p95_ms"] < BUDGET_MS or result["load_avg"] <= cores:
            break
        time.sleep(20)
    best = min(results, key=lambda r: r["p95_ms"])
    if best["p95_ms"] < BUDGET_MS:
        return
    overloaded = all(r["load_avg"] > cores for r in results)
    assert overloaded, f"p95 over {BUDGET_MS} ms on a machine that was not overloaded: {results}"
    print(f"NOTE: load average above {cores} cores in every run; wall-clock p95 not verifiable "
          f"here, checking CPU time per request instead")
    assert max(r["cpu_p95_ms"] for r in results) < BUDGET_MS / 3, results


def test_bench_human_output_and_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    """In-process: the printed sentence, and refused arguments."""
    call_command("board_bench", "--projects", "5", "--requests", "2")
    out = capsys.readouterr().out
    assert out.startswith("board with 5 projects") and "SQL queries per request" in out
    with pytest.raises(CommandError, match="at least 1"):
        call_command("board_bench", "--projects", "0")
