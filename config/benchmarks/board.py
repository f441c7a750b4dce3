"""Timing the team board on a realistic amount of data (the `board_bench` command).

Everything is created inside one transaction that is rolled back at the end, so a bench run on
the real database leaves nothing behind.
"""

from __future__ import annotations

import gc
import statistics
import time
import uuid
from dataclasses import asdict, dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.models import ApprovalRequest, Iteration, Project, Run
from teams.models import Membership, Team

STATUSES = list(Project.Status.values)


@dataclass(frozen=True)
class BenchResult:
    projects: int
    requests: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    # CPU time of this process per request (the database's own time is not in it): on a machine
    # busy with other work, wall time measures the scheduler, this measures the board.
    cpu_p95_ms: float
    queries: int
    cards: int

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


class _Rollback(Exception):
    pass


def board_seed(*, team: Team, requester: User, projects: int) -> None:
    """`projects` projects spread over every status, each with a run of two iterations; every
    tenth waits for an approval."""
    rows = [Project(team=team, requester=requester, name=f"bench-plugin-{i}",
                    status=STATUSES[i % len(STATUSES)], spec={"name": f"bench-plugin-{i}"})
            for i in range(projects)]
    for place, project in enumerate(p for p in rows if p.status == Project.Status.QUEUED):
        project.queue_position = place + 1
    rows = Project.objects.bulk_create(rows)
    runs = Run.objects.bulk_create([Run(project=p, iteration=2, tokens_prompt=4000,
                                        tokens_completion=900) for p in rows])
    Iteration.objects.bulk_create([Iteration(run=run, number=n, pass_rate=0.4 * n, files={})
                                   for run in runs for n in (1, 2)])
    ApprovalRequest.objects.bulk_create([
        ApprovalRequest(run=run, project_id=run.project_id, kind=ApprovalRequest.Kind.CHANGE,
                        iteration=2) for run in runs[::10]])


def _host() -> str:
    for host in settings.ALLOWED_HOSTS:
        if host != "*" and not host.startswith("."):
            return host
    return "localhost"


def board_bench(*, projects: int, requests: int = 30, warmup: int = 3) -> BenchResult:
    """Render the board of a team with `projects` projects `requests` times through the whole
    request stack (middleware, session, templates) and report the timings."""
    result: BenchResult | None = None
    try:
        with transaction.atomic():
            result = _measure(projects, requests, warmup)
            raise _Rollback
    except _Rollback:
        pass
    assert result is not None
    return result


def _measure(projects: int, requests: int, warmup: int) -> BenchResult:
    tag = uuid.uuid4().hex[:8]
    team = Team.objects.create(name=f"Board bench {tag}", slug=f"board-bench-{tag}")
    users = get_user_model().objects
    reviewer = users.create_user(username=f"bench-reviewer-{tag}")
    requester = users.create_user(username=f"bench-requester-{tag}")
    Membership.objects.create(team=team, user=reviewer, role=Membership.Role.REVIEWER)
    Membership.objects.create(team=team, user=requester, role=Membership.Role.REQUESTER)
    board_seed(team=team, requester=requester, projects=projects)
    client = Client(HTTP_HOST=_host())
    client.force_login(reviewer)
    url = reverse("board", args=[team.slug])
    for _ in range(warmup):
        client.get(url)
    # As the ASGI/WSGI servers do at startup (config/asgi.py): long-lived objects stay out of
    # the collector's full passes. The bench data itself is not frozen: it is created before.
    gc.freeze()
    timings, cpu = [], []
    for _ in range(requests):
        started, started_cpu = time.perf_counter(), time.process_time()
        response = client.get(url)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"the board answered {response.status_code}")
    with CaptureQueriesContext(connection) as queries:
        html = client.get(url).content.decode()
    return BenchResult(projects=projects, requests=requests,
                       p50_ms=round(statistics.median(timings), 1),
                       p95_ms=round(_percentile(timings, 95), 1), max_ms=round(max(timings), 1),
                       cpu_p95_ms=round(_percentile(cpu, 95), 1), queries=len(queries),
                       cards=html.count('class="board-card'))


def _percentile(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    index = max(int(round(percent / 100 * len(ordered) + 0.5)) - 1, 0)
    return ordered[min(index, len(ordered) - 1)]
