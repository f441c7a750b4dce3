"""`manage.py bench_load`: many browsers on a running portal, timed from outside.

The in-process benches (`board_bench`, `marketplace_bench`) time one request at a time inside
Django; this one measures what a team meets: N clients, each sending its next request as soon
as the last one answered (a closed loop), over real HTTP against the server `up` or compose
runs, with its ASGI processes, session handling and database. Every answer that is not a
200 page (a timeout, a 5xx, a redirect to the login page) counts as an error.

Catalogue searches use a query no client sent before ("new queries"), so nothing is answered
from a cache of earlier searches. See docs/operating.md, "Load".
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx

PAGES = ("board", "catalogue")
SEARCH_WORDS = ("csv", "invoice", "meeting", "report", "excel", "calendar", "email", "totals",
                "convert", "clean", "merge", "schedule", "expenses", "weather", "json", "log")
REQUEST_TIMEOUT_S = 30.0
_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class LoginFailed(Exception):
    """The bench could not log in: wrong URL, user or password."""


@dataclass
class LoadResult:
    page: str
    clients: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return len(self.latencies_ms) + self.errors

    @property
    def throughput(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    def percentile(self, q: int) -> float:
        if len(self.latencies_ms) < 2:
            return self.latencies_ms[0] if self.latencies_ms else 0.0
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[q - 1]

    def as_dict(self) -> dict[str, object]:
        return {"page": self.page, "clients": self.clients, "seconds": round(self.seconds, 1),
                "requests": self.requests, "throughput_rps": round(self.throughput, 1),
                "p50_ms": round(self.percentile(50), 1), "p95_ms": round(self.percentile(95), 1),
                "errors": self.errors, "error_samples": self.error_samples[:5]}


def page_urls(page: str, team: str) -> Iterator[str]:
    """The endless sequence of paths one page's load asks for."""
    if page == "board":
        return itertools.repeat(f"/t/{team}/board/")
    # Every search is new: a word and a counter no earlier request used.
    return (f"/marketplace/?q={SEARCH_WORDS[n % len(SEARCH_WORDS)]}+{n}"
            for n in itertools.count())


async def _login(client: httpx.AsyncClient, username: str, password: str) -> None:
    page = await client.get("/login/")
    token = _CSRF_INPUT.search(page.text)
    if page.status_code != 200 or token is None:
        raise LoginFailed(f"GET /login/ answered {page.status_code} without a login form")
    answer = await client.post("/login/", data={
        "csrfmiddlewaretoken": token.group(1), "username": username, "password": password,
    }, headers={"Referer": str(page.url)})
    if answer.status_code != 302:
        raise LoginFailed(f"logging in as {username!r} failed (HTTP {answer.status_code})")


async def _one_client(client: httpx.AsyncClient, urls: Iterator[str], until: float,
                      result: LoadResult) -> None:
    while time.monotonic() < until:
        url = next(urls)
        started = time.perf_counter()
        try:
            answer = await client.get(url)
            problem = "" if answer.status_code == 200 else f"HTTP {answer.status_code} {url}"
        except httpx.HTTPError as error:
            problem = f"{type(error).__name__} {url}"
        if problem:
            result.errors += 1
            result.error_samples.append(problem)
        else:
            result.latencies_ms.append((time.perf_counter() - started) * 1000)


async def _load(*, base_url: str, page: str, team: str, clients: int, seconds: float,
                username: str, password: str, warmup: int) -> LoadResult:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=REQUEST_TIMEOUT_S,
                                 follow_redirects=False) as client:
        await _login(client, username, password)
        urls = page_urls(page, team)
        # Concurrent, so that every server process answers some before the clock starts.
        await asyncio.gather(*(client.get(next(urls)) for _ in range(warmup)))
        result = LoadResult(page=page, clients=clients, seconds=seconds)
        started = time.monotonic()
        await asyncio.gather(*(_one_client(client, urls, started + seconds, result)
                               for _ in range(clients)))
        result.seconds = time.monotonic() - started
        return result


SEED_PROJECTS = 60
SEED_PLUGINS = 300


@dataclass(frozen=True)
class Seeded:
    projects: int
    plugins: int


def seed_sample_data(*, team_slug: str) -> Seeded:
    """Fill the team's board up to SEED_PROJECTS projects and the catalogue up to SEED_PLUGINS
    published plugins (the data docs/operating.md's figures were measured with); what is
    there already counts, so a second call adds nothing."""
    from django.db import transaction

    from config.benchmarks.board import board_seed
    from config.benchmarks.marketplace import catalogue_seed, synthetic_entries
    from marketplace.models import Plugin
    from runs.models import Project
    from teams.models import Membership, Team

    team = Team.objects.filter(slug=team_slug).first()
    if team is None:
        raise LookupError(f"there is no team {team_slug!r} to seed")
    member = Membership.objects.filter(team=team).select_related("user").first()
    if member is None:
        raise LookupError(f"team {team_slug!r} has no member to ask for the sample projects")
    projects = max(0, SEED_PROJECTS - Project.objects.filter(team=team).count())
    plugins = max(0, SEED_PLUGINS - Plugin.objects.count())
    with transaction.atomic():  # the catalogue's rows point at each other until the commit
        if projects:
            board_seed(team=team, requester=member.user, projects=projects)
        if plugins:
            catalogue_seed(team=team, entries=synthetic_entries(plugins))
    return Seeded(projects=projects, plugins=plugins)


def run_load(*, base_url: str, page: str, team: str = "demo", clients: int = 20,
             seconds: float = 30.0, username: str, password: str, warmup: int = 40,
             progress: Callable[[str], None] = lambda _: None) -> LoadResult:
    """`clients` logged-in clients ask for `page` back to back for `seconds`."""
    logging.getLogger("httpx").setLevel(logging.WARNING)  # not one line per request
    progress(f"{page}: {clients} clients for {seconds:.0f} s against {base_url}")
    return asyncio.run(_load(base_url=base_url.rstrip("/"), page=page, team=team,
                             clients=clients, seconds=seconds, username=username,
                             password=password, warmup=warmup))
