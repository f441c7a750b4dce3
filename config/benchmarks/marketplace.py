"""Catalogue seeding and the `marketplace_bench` measurement.

Seeding writes plugins straight into the tables (a published version and two artifact rows
each, real summary embeddings, the same full-text vector the publish service computes), because
running thousands of plugins through the sandbox would take hours and measure the sandbox, not
the catalogue. The bench runs inside one transaction that is rolled back, so it leaves nothing.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypedDict

from django.conf import settings
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from marketplace.models import Artifact, Plugin, PluginVersion
from marketplace.selectors.catalogue import catalogue_search, clean_params
from marketplace.selectors.visibility import viewer_for
from marketplace.services.submissions import embedding_text
from marketplace.validation import normalize_name
from teams.models import Membership, Team

EMBED_BATCH = 256


@dataclass(frozen=True)
class SeedPlugin:
    name: str
    summary: str
    category: str = Plugin.Category.OTHER
    tags: tuple[str, ...] = ()
    readme: str = ""
    installs: int = 0
    rating: float = 0.0
    ratings: int = 0
    visibility: str = Plugin.Visibility.PUBLIC
    days_ago: int = 0


def catalogue_seed(*, team: Team, entries: Sequence[SeedPlugin],
                   progress: Callable[[str], None] | None = None) -> list[Plugin]:
    """Published plugins for `entries`, searchable exactly as published ones are.

    Every row is written once, complete (version ids are drawn from their sequence first and
    the full-text vectors computed up front), so a fresh catalogue has no dead row versions.
    """
    vectors = _embeddings([embedding_text(e.name, e.summary) for e in entries], progress)
    readmes = [e.readme or f"# {e.name}\n\n{e.summary}\n" for e in entries]
    search = _search_vectors(entries, readmes)
    version_ids = _next_ids("marketplace_pluginversion", len(entries))
    now = timezone.now()
    plugins = Plugin.objects.bulk_create([
        Plugin(name=e.name, normalized_name=normalize_name(e.name), team=team,
               visibility=e.visibility, category=e.category, tags=list(e.tags),
               summary=e.summary, install_count=e.installs, rating_avg=e.rating,
               rating_count=e.ratings, summary_embedding=vector, search_vector=text,
               latest_version_id=version_id, published_at=now - timedelta(days=e.days_ago),
               updated_at=now - timedelta(days=e.days_ago))
        for e, vector, text, version_id in zip(entries, vectors, search, version_ids,
                                               strict=True)], batch_size=1000)
    versions = PluginVersion.objects.bulk_create([
        PluginVersion(id=version_id, plugin=p, version="1.0.0",
                      status=PluginVersion.Status.PUBLISHED,
                      source=PluginVersion.Source.UPLOAD, visibility=p.visibility,
                      category=p.category, tags=p.tags, summary=p.summary,
                      manifest={"entry": f"{_package(p.name)}.plugin:Plugin"},
                      readme=readme, files={},
                      source_sha256=hashlib.sha256(p.name.encode()).hexdigest(),
                      requires_python=">=3.11", published_at=p.published_at)
        for p, readme, version_id in zip(plugins, readmes, version_ids, strict=True)],
        batch_size=1000)
    Artifact.objects.bulk_create([
        Artifact(version=v, kind=kind, filename=_filename(v, kind), size=1000,
                 sha256=hashlib.sha256(f"{v.plugin.name}{kind}".encode()).hexdigest(),
                 path=f"bench/{v.plugin.normalized_name}/{_filename(v, kind)}")
        for v in versions for kind in ("wheel", "sdist")], batch_size=2000)
    _settle()
    return plugins


# The same weights and configuration as services.search_vector_for, for many rows at once.
_SEARCH_SQL = """
SELECT (setweight(to_tsvector('english'::regconfig, n || ' ' || translate(n, '-_', '  ')), 'A')
     || setweight(to_tsvector('english'::regconfig, s), 'B')
     || setweight(to_tsvector('english'::regconfig, left(r, 20000)), 'C'))::text
FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS t(n, s, r, i)
ORDER BY i
"""


def _search_vectors(entries: Sequence[SeedPlugin], readmes: list[str]) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(_SEARCH_SQL, [[e.name for e in entries],
                                     [f"{e.summary} {' '.join(e.tags)}" for e in entries],
                                     readmes])
        return [row[0] for row in cursor.fetchall()]


def _next_ids(table: str, count: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))"
                       " FROM generate_series(1, %s)", [table, count])
        return [row[0] for row in cursor.fetchall()]


def _settle() -> None:
    with connection.cursor() as cursor:
        # Fold the GIN pending list in and refresh statistics, as autovacuum would by now.
        cursor.execute("SELECT gin_clean_pending_list('plugin_search_gin'::regclass)")
        for table in ("marketplace_plugin", "marketplace_pluginversion", "marketplace_artifact"):
            cursor.execute(f"ANALYZE {table}")  # noqa: S608 - fixed table names


def _package(name: str) -> str:
    return normalize_name(name).replace("-", "_")


def _filename(version: PluginVersion, kind: str) -> str:
    stem = f"{_package(version.plugin.name)}-{version.version}"
    return f"{stem}-py3-none-any.whl" if kind == "wheel" else f"{stem}.tar.gz"


def _embeddings(texts: list[str], progress: Callable[[str], None] | None) -> list[list[float]]:
    from autocoder.lessons.embedder import embed_texts

    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.extend(row.tolist() for row in embed_texts(texts[start:start + EMBED_BATCH]))
        if progress:
            progress(f"embedded {len(vectors)}/{len(texts)} summaries")
    return vectors


# -- a synthetic catalogue -----------------------------------------------------------------------

_VERBS = ("plans", "summarises", "cleans", "converts", "checks", "tracks", "schedules", "sorts",
          "drafts", "reminds about", "totals", "merges", "translates", "validates", "formats")
_THINGS = ("staff shifts", "invoices", "CSV files", "meeting notes", "expenses", "emails",
           "recipes", "inventory", "timesheets", "customer orders", "class timetables",
           "bank statements", "support tickets", "event invitations", "delivery routes",
           "medication times", "garden tasks", "book loans", "survey answers", "receipts")
_FOR = ("a small shop", "a school", "a clinic", "a family", "a football club", "a bakery",
        "freelancers", "a warehouse", "volunteers", "a dental practice", "a library", "a cafe")
_DETAILS = ("and flags anything unusual", "with weekly totals", "into a printable table",
            "and sends a short summary", "following local holidays", "with colour codes",
            "so nobody is double-booked", "keeping the original order", "per person and month")
_TAGS = ("csv", "calendar", "email", "pdf", "money", "text", "staff", "health", "school",
         "shop", "reports", "reminders", "import", "export", "time")
QUERIES = (
    "plan staff shifts for the week", "clean up a csv file", "total my expenses",
    "remind me about medication", "schedule classes for a school", "summarise meeting notes",
    "track inventory in a warehouse", "convert receipts to a table", "sort customer orders",
    "check timesheets for mistakes", "translate emails", "merge bank statements",
    "delivery route planning", "garden task reminders", "library book loans",
    "survey answer summary", "invoice validation", "event invitation drafts",
    "recipe formatting", "support ticket triage",
)


def synthetic_entries(count: int, *, seed: int = 7) -> list[SeedPlugin]:
    rng = random.Random(seed)
    categories = list(Plugin.Category.values)
    entries = []
    for i in range(count):
        verb, thing, who = rng.choice(_VERBS), rng.choice(_THINGS), rng.choice(_FOR)
        summary = f"{verb.capitalize()} {thing} for {who} {rng.choice(_DETAILS)}."
        words = thing.split()[-1].lower().strip("s")
        entries.append(SeedPlugin(
            name=f"{words}-{verb.split()[0]}-{i}", summary=summary,
            category=rng.choice(categories), tags=tuple(rng.sample(_TAGS, 3)),
            readme=f"# {thing}\n\n{summary}\n\nWorks for {who}. {rng.choice(_DETAILS)}.\n",
            installs=rng.randint(0, 5000), rating=round(rng.uniform(1, 5), 2),
            ratings=rng.randint(0, 200), days_ago=rng.randint(0, 700),
            visibility=rng.choice(("public", "public", "public", "team", "private"))))
    return entries


# -- the measurement -----------------------------------------------------------------------------


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


class Timing(TypedDict):
    p50_ms: float
    p95_ms: float
    max_ms: float


class SearchFigures(TypedDict):
    new_queries: Timing
    repeated_queries: Timing
    browse: Timing
    count: int


class IndexFigures(Timing):
    count: int
    statuses: list[int]
    viewer: str


class MarketplaceFigures(TypedDict):
    """What `marketplace_bench` prints."""

    plugins: int
    catalogue_total: int
    seed_s: float
    search: SearchFigures
    index: IndexFigures
    search_p95_ms: float
    simple_project_p95_ms: float


def _summary(samples: list[float]) -> Timing:
    return {"p50_ms": round(statistics.median(samples), 2),
            "p95_ms": round(_percentile(samples, 0.95), 2),
            "max_ms": round(max(samples), 2)}


class _Rollback(Exception):
    def __init__(self, figures: MarketplaceFigures) -> None:
        super().__init__("rolled back")
        self.figures = figures


def bench_run(*, plugins: int, searches: int = 300, index_requests: int = 300,
              seed: int = 7, progress: Callable[[str], None] | None = None
              ) -> MarketplaceFigures:
    """Seed `plugins` plugins, time catalogue searches and /simple/<name>/, roll back."""
    try:
        with transaction.atomic():
            raise _Rollback(_bench_in_transaction(plugins, searches, index_requests, seed,
                                                  progress))
    except _Rollback as rolled:
        return rolled.figures


def _bench_in_transaction(plugins: int, searches: int, index_requests: int, seed: int,
                          progress: Callable[[str], None] | None) -> MarketplaceFigures:
    from django.contrib.auth import get_user_model

    team = Team.objects.create(name="Bench", slug=f"bench-{time.time_ns()}")
    user = get_user_model().objects.create(username=f"bench-{time.time_ns()}")
    Membership.objects.create(team=team, user=user, role=Membership.Role.REVIEWER)
    started = time.perf_counter()
    seeded = catalogue_seed(team=team, entries=synthetic_entries(plugins, seed=seed),
                            progress=progress)
    seed_s = time.perf_counter() - started
    rng = random.Random(seed)
    search = _time_searches(user, searches, rng, progress)
    index = _time_index(seeded, index_requests, rng)
    total = Plugin.objects.count()
    return {"plugins": plugins, "catalogue_total": total, "seed_s": round(seed_s, 1),
            "search": search, "index": index,
            "search_p95_ms": search["new_queries"]["p95_ms"],
            "simple_project_p95_ms": index["p95_ms"]}


def _time_searches(user: Any, count: int, rng: random.Random,
                   progress: Callable[[str], None] | None) -> SearchFigures:
    from marketplace.selectors.catalogue import _cached_embedding

    viewer = viewer_for(user)
    sorts = ("relevance", "relevance", "relevance", "installs", "rating", "updated")
    catalogue_search(viewer=viewer, params=clean_params(q="warm up the embedder"))
    fresh, repeated, browse = [], [], []
    for i in range(count):
        # A query nobody asked before (the embedding is computed) ...
        base = rng.choice(QUERIES)
        query = f"{base} {rng.choice(_FOR)} {i}"
        sort = rng.choice(sorts)
        fresh.append(_timed_search(viewer, clean_params(q=query, sort=sort)))
        # ... the same one again (next page, other sort: the embedding is cached) ...
        repeated.append(_timed_search(viewer, clean_params(q=query, sort="relevance", page=2)))
        # ... and browsing without words, filtered by category or tag.
        browse.append(_timed_search(viewer, clean_params(
            category=rng.choice(list(Plugin.Category.values)), sort=sort,
            tag=rng.choice(("", "", *_TAGS)))))
        if progress and (i + 1) % 100 == 0:
            progress(f"searched {i + 1}/{count}")
    _cached_embedding.cache_clear()
    return {"new_queries": _summary(fresh), "repeated_queries": _summary(repeated),
            "browse": _summary(browse), "count": count}


def _timed_search(viewer: Any, params: Any) -> float:
    started = time.perf_counter()
    catalogue_search(viewer=viewer, params=params)
    return (time.perf_counter() - started) * 1000


def _time_index(seeded: list[Plugin], count: int, rng: random.Random) -> IndexFigures:
    host = next((h for h in settings.ALLOWED_HOSTS if h and "*" not in h and not h.startswith(".")),
                "localhost")
    client = Client(HTTP_HOST=host)
    public = [p.normalized_name for p in seeded if p.visibility == Plugin.Visibility.PUBLIC]
    json_accept = "application/vnd.pypi.simple.v1+json"
    samples, statuses = [], set()
    for i in range(count):
        name = rng.choice(public)
        accept = json_accept if i % 2 else "text/html"
        started = time.perf_counter()
        response = client.get(f"/simple/{name}/", HTTP_ACCEPT=accept)
        samples.append((time.perf_counter() - started) * 1000)
        statuses.add(response.status_code)
    if statuses != {200}:
        print(f"warning: /simple/ answered {sorted(statuses)}", file=sys.stderr)
    return {**_summary(samples), "count": count, "statuses": sorted(statuses),
            "viewer": "anonymous (public plugins)"}
