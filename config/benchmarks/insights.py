"""Timing "How generation is going" on a year of a busy team's runs (`insights_bench`).

Everything is created inside one transaction that is rolled back at the end, so a bench run on
the real database leaves nothing behind.
"""

from __future__ import annotations

import gc
import statistics
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from config.benchmarks.board import _host, _percentile
from runs.models import ApprovalRequest, Iteration, LoopEvent, Project, Run
from teams.models import Membership, Team

WEEKS = 52
# Outcomes in a realistic mix: mostly successes, some after failed attempts.
OUTCOMES = [Run.Status.SUCCEEDED] * 7 + [Run.Status.FAILED, Run.Status.CANCELLED,
                                         Run.Status.RUNNING]


@dataclass(frozen=True)
class InsightsBenchResult:
    runs: int
    requests: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    cpu_p95_ms: float
    queries: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


class _Rollback(Exception):
    pass


def insights_bench(*, runs: int, requests: int = 30, warmup: int = 3) -> InsightsBenchResult:
    """Render the page for a team with `runs` runs over a year, `requests` times through the
    whole request stack, and report the timings."""
    result: InsightsBenchResult | None = None
    try:
        with transaction.atomic():
            result = _measure(runs, requests, warmup)
            raise _Rollback
    except _Rollback:
        pass
    assert result is not None
    return result


def insights_seed(*, team: Team, runs: int) -> None:
    """`runs` runs spread over the last WEEKS weeks, with two or three attempts each, a gate
    decision on every fourth and a loop-detector event on every fifth."""
    requester = get_user_model().objects.create_user(username=f"insights-bench-{team.slug}")
    projects = Project.objects.bulk_create([
        Project(team=team, requester=requester, name=f"insights-plugin-{i}",
                spec={"name": f"insights-plugin-{i}"}) for i in range(max(1, runs // 10))])
    now = timezone.now()
    rows = Run.objects.bulk_create([
        Run(project=projects[i % len(projects)], status=OUTCOMES[i % len(OUTCOMES)],
            iteration=2 + i % 2, tokens_prompt=4000, tokens_completion=900,
            started_at=now, finished_at=now + timedelta(minutes=5 + i % 30))
        for i in range(runs)])
    Iteration.objects.bulk_create([
        Iteration(run=run, number=n, succeeded=n == run.iteration, files={})
        for run in rows for n in range(1, run.iteration + 1)])
    ApprovalRequest.objects.bulk_create([
        ApprovalRequest(run=run, project_id=run.project_id, kind=ApprovalRequest.Kind.PLAN,
                        status=ApprovalRequest.Status.APPROVED, decided_by=requester,
                        decided_at=now) for run in rows[::4]])
    LoopEvent.objects.bulk_create([
        LoopEvent(run=run, iteration=1, type=("repeated_error", "no_progress")[run.pk % 2],
                  action="reset_context") for run in rows[::5]])
    ids = [run.pk for run in rows]
    for week in range(WEEKS):  # created_at is set on insert; spread the runs over the year
        Run.objects.filter(pk__in=ids[week::WEEKS]).update(
            created_at=now - timedelta(weeks=week, hours=week % 24))


def _measure(runs: int, requests: int, warmup: int) -> InsightsBenchResult:
    tag = uuid.uuid4().hex[:8]
    team = Team.objects.create(name=f"Insights bench {tag}", slug=f"insights-bench-{tag}")
    lead = get_user_model().objects.create_user(username=f"insights-lead-{tag}")
    Membership.objects.create(team=team, user=lead, role=Membership.Role.ADMIN)
    insights_seed(team=team, runs=runs)
    client = Client(HTTP_HOST=_host())
    client.force_login(lead)
    url = f"{reverse('team_insights', args=[team.slug])}?weeks=52"
    for _ in range(warmup):
        client.get(url)
    gc.freeze()  # as the servers do at startup (config/asgi.py)
    timings, cpu = [], []
    for _ in range(requests):
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"the page answered {response.status_code}")
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    return InsightsBenchResult(
        runs=runs, requests=requests, p50_ms=round(statistics.median(timings), 1),
        p95_ms=round(_percentile(timings, 95), 1), max_ms=round(max(timings), 1),
        cpu_p95_ms=round(_percentile(cpu, 95), 1), queries=len(queries))
