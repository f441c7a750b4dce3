"""The filtered mode of `manage.py lessons_bench --teams T`: lesson searches limited to one team.

N synthetic lessons (clustered like lesson embeddings, `lessons.synthetic_data`) are spread over
T teams of very different sizes (from one lesson to 50,000: many small teams, a few big ones),
and each query asks for one team's 10 nearest lessons, as `lessons_nearest` does. Recall@10 is
measured against the exact answer (numpy, over that team's vectors) and latency as a client sees
it, per team-size band, for:

* `new`: this version's server (the session's PostgreSQL, 18 with pgvector 0.8) asked as
  `lessons_nearest` asks, once every team of TEAM_INDEX_MIN_ROWS lessons or more has the
  index of its own that the watchdog builds (autocoder/lessons/team_indexes.py): the team's
  lessons counted from the team index, an exact scan for a smaller team, else a search of the
  team's own index asked for INDEX_MIN_FETCH rows of which the closest 10 are kept (and the
  exact-scan fallback);
* `iterative`: the same server before the teams' indexes are built, every query through the
  shared index's iterative scan asked for 10 rows;
* `old`: the previous embedded server (PostgreSQL 16.2, pgvector 0.6.2, from the `pgserver`
  wheel, started here in a scratch directory when that wheel is installed) with what the
  product did there: an index scan, then an exact scan when it returned fewer rows than asked;
* `halfvec` (optional): the new server with a half-precision index, for its recall and size.

The same rows and queries go to every server. See docs/lessons.md for figures.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from autocoder.lessons.embedder import DIMENSIONS
from autocoder.lessons.models import HNSW_EF_CONSTRUCTION, HNSW_M
from autocoder.lessons.selectors import HNSW_ITERATIVE_SCAN, INDEX_MIN_FETCH
from autocoder.lessons.team_indexes import TEAM_INDEX_MIN_ROWS
from config.benchmarks.lessons import (
    COPY_BATCH_ROWS,
    TOP_K,
    BenchConfig,
    _percentile,
    maintenance_work_mem,
    scratch_connection,
    synthetic_data,
)

MAX_TEAM = 50_000
BANDS = ((1, 9), (10, 99), (100, 999), (1_000, 9_999), (10_000, None))
Progress = Callable[[str], None]


@dataclass(frozen=True)
class FilteredConfig:
    n: int
    teams: int
    queries_per_band: int = 50
    m: int = 16
    ef_construction: int = 128
    ef_search: int = 100
    halfvec: bool = False
    old_server: bool = True
    seed: int = 7


def band_name(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else f"{low}-{high}"


def team_sizes(n: int, teams: int) -> np.ndarray:
    """`teams` sizes summing to `n`, from 1 up to min(50,000, n/4): sizes spaced evenly on a
    log scale after warping by a power p (found by bisection), so most teams are small."""
    if teams < 1 or n < teams:
        raise ValueError("--teams must be at least 1 and at most --n")
    top = max(1.0, min(MAX_TEAM, n / 4))
    positions = np.linspace(0.0, 1.0, teams)

    def sizes(p: float) -> np.ndarray:
        return np.maximum(1, np.round(np.exp(np.log(top) * (1 - positions) ** p))).astype(int)

    low, high = 0.01, 200.0
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if sizes(middle).sum() > n else (low, middle)
    result = sizes(high)
    result[0] += n - result.sum()  # the rounding's remainder goes to the biggest team
    if result[0] < 1:
        raise ValueError("--n is too small for that many teams")
    return result


@dataclass(frozen=True)
class Workload:
    data: np.ndarray
    team_of: np.ndarray
    members: dict[int, np.ndarray]
    queries: list[tuple[str, int, np.ndarray]]  # (band, team, vector)


def workload(config: FilteredConfig) -> Workload:
    # Queries around the same topics as the lessons (not in the table), like real questions.
    data, vectors, _ = synthetic_data(BenchConfig(
        n=config.n, queries=config.queries_per_band * len(BANDS), seed=config.seed))
    rng = np.random.default_rng(config.seed + 1)
    sizes = team_sizes(config.n, config.teams)
    team_of = rng.permutation(np.repeat(np.arange(1, config.teams + 1), sizes))
    order = np.argsort(team_of, kind="stable")
    starts = np.searchsorted(team_of[order], np.arange(1, config.teams + 2))
    members = {team: order[starts[team - 1]:starts[team]] for team in range(1, config.teams + 1)}
    queries: list[tuple[str, int, np.ndarray]] = []
    for index, (low, high) in enumerate(BANDS):
        in_band = [t for t, size in enumerate(sizes, start=1)
                   if size >= low and (high is None or size <= high)]
        if not in_band:
            continue
        picked = rng.choice(in_band, size=config.queries_per_band)
        block = vectors[index * config.queries_per_band:(index + 1) * config.queries_per_band]
        queries += [(band_name(low, high), int(t), v) for t, v in zip(picked, block, strict=True)]
    return Workload(data=data, team_of=team_of, members=members, queries=queries)


def truth(work: Workload, team: int, vector: np.ndarray) -> list[int]:
    ids = work.members[team]
    scores = work.data[ids] @ vector
    return [int(i) for i in ids[np.argsort(-scores, kind="stable")[:TOP_K]]]


def _fill(raw: Any, table: str, work: Workload, halfvec: bool) -> float:
    started = time.perf_counter()
    with raw.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cursor.execute(f"CREATE UNLOGGED TABLE {table} (id bigint PRIMARY KEY, team_id int NOT "
                       f"NULL, embedding vector({DIMENSIONS}) NOT NULL)")
        for start in range(0, len(work.data), COPY_BATCH_ROWS):
            with cursor.copy(f"COPY {table} (id, team_id, embedding) FROM STDIN WITH "
                             "(FORMAT BINARY)") as copy:
                copy.set_types(["int8", "int4", "vector"])
                for offset, vector in enumerate(work.data[start:start + COPY_BATCH_ROWS]):
                    copy.write_row([start + offset, int(work.team_of[start + offset]), vector])
        cursor.execute(f"CREATE INDEX {table}_team ON {table} (team_id)")
        cursor.execute(f"SET maintenance_work_mem = '{maintenance_work_mem(len(work.data))}'")
        cursor.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw (embedding "
                       "vector_cosine_ops) WITH (m = 16, ef_construction = 128)")
        if halfvec:
            cursor.execute(f"CREATE INDEX {table}_half ON {table} USING hnsw ((embedding::"
                           f"halfvec({DIMENSIONS})) halfvec_cosine_ops) WITH (m = 16, "
                           "ef_construction = 128)")
        cursor.execute(f"ANALYZE {table}")
    return time.perf_counter() - started


def _team_indexes(raw: Any, table: str, work: Workload) -> dict[str, float]:
    """An index of its own for every team of TEAM_INDEX_MIN_ROWS lessons or more, as the
    watchdog builds them (autocoder/lessons/team_indexes.py): how many, build time, size."""
    started = time.perf_counter()
    big = [team for team, members in work.members.items() if len(members) >= TEAM_INDEX_MIN_ROWS]
    with raw.cursor() as cursor:
        for team in big:
            cursor.execute(f"SET maintenance_work_mem = "
                           f"'{max(64, len(work.members[team]) * 2400 // 2**20)}MB'")
            cursor.execute(f"CREATE INDEX {table}_t{team} ON {table} USING hnsw (embedding "
                           f"vector_cosine_ops) WITH (m = {HNSW_M}, ef_construction = "
                           f"{HNSW_EF_CONSTRUCTION}) WHERE team_id = {int(team)}")
        cursor.execute("RESET maintenance_work_mem")
        cursor.execute("SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index "
                       "WHERE indrelid = %s::regclass AND indexrelid::regclass::text LIKE %s",
                       [table, f"{table}_t%"])
        size = float(cursor.fetchone()[0])
    return {"teams": len(big), "build_s": round(time.perf_counter() - started, 1),
            "mb": round(size / 2**20, 1)}


def _index_mb(raw: Any, name: str) -> float:
    with raw.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size(%s::regclass)", [name])
        return round(cursor.fetchone()[0] / 2**20, 1)


def _search(raw: Any, table: str, strategy: str, ef_search: int, work: Workload,
            iterative: str = HNSW_ITERATIVE_SCAN) -> dict[str, dict[str, float]]:
    """Per band: recall@10 and latency of `lessons_nearest`'s way of asking (`new`: an exact
    scan for a team under TEAM_INDEX_MIN_ROWS, else a look in the catalog and a search of the
    team's own index; the others: the shared index), then an exact scan when the index
    returned fewer than 10 of a team that has 10."""
    order = (f"embedding::halfvec({DIMENSIONS}) <=> %s::halfvec({DIMENSIONS})"
             if strategy == "halfvec" else "embedding <=> %s")
    index_sql = f"SELECT id FROM {table} WHERE team_id = %s ORDER BY {order} LIMIT {TOP_K}"  # noqa: S608
    relaxed = strategy != "old" and iterative == "relaxed_order"
    if relaxed:  # re-sorted, as pgvector advises; `new` asks for more rows, as retrieval does
        fetch = max(TOP_K, INDEX_MIN_FETCH) if strategy == "new" else TOP_K
        # The team id is written into the query, as Django does: a partial index is used
        # only when the planner sees that the query's filter implies the index's.
        index_sql = (f"WITH found AS MATERIALIZED (SELECT id, {order} AS d FROM {table} "  # noqa: S608
                     f"WHERE team_id = {{team}} ORDER BY d LIMIT {fetch}) SELECT id FROM found "
                     f"ORDER BY d LIMIT {TOP_K}")
    exact_sql = (f"SELECT id FROM {table} WHERE team_id = %s "  # noqa: S608
                 f"ORDER BY (embedding <=> %s) + 0 LIMIT {TOP_K}")
    count_sql = (f"SELECT count(*) FROM (SELECT team_id FROM {table} WHERE team_id = %s "  # noqa: S608
                 f"LIMIT {TEAM_INDEX_MIN_ROWS}) scope")
    catalog_sql = ("SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = "
                   "i.indexrelid WHERE c.relname = %s AND i.indrelid = %s::regclass")
    by_band: dict[str, tuple[list[float], list[float], int, int]] = {}
    with raw.cursor() as cursor:
        cursor.execute(f"SET hnsw.ef_search = {int(ef_search)}")
        if strategy != "old":
            cursor.execute(f"SET hnsw.iterative_scan = {iterative}")
        for band, team, vector in work.queries:
            started = time.perf_counter()
            small = False
            if strategy == "new":
                cursor.execute(count_sql, [team])
                small = cursor.fetchone()[0] < TEAM_INDEX_MIN_ROWS
                if not small:
                    cursor.execute(catalog_sql, [f"{table}_t{team}", table])
                    cursor.fetchone()
            ids: list[int] = []
            if not small:
                if relaxed:
                    cursor.execute(index_sql.format(team=int(team)), [vector])
                else:
                    cursor.execute(index_sql, [team, vector])
                ids = [row[0] for row in cursor.fetchall()]
            fallback = not small and len(ids) < TOP_K
            if small or fallback:
                cursor.execute(exact_sql, [team, vector])
                ids = [row[0] for row in cursor.fetchall()]
            elapsed = (time.perf_counter() - started) * 1000
            expected = truth(work, team, vector)
            times, recalls, fallbacks, exact = by_band.setdefault(band, ([], [], 0, 0))
            times.append(elapsed)
            recalls.append(len(set(ids) & set(expected)) / len(expected))
            by_band[band] = (times, recalls, fallbacks + int(fallback), exact + int(small))
        cursor.execute("RESET ALL")
    return {band: {"recall_at_10": round(float(np.mean(recalls)), 4),
                   "p50_ms": _percentile(times, 50), "p95_ms": _percentile(times, 95),
                   "exact_scans": exact, "exact_fallbacks": fallbacks, "queries": len(times)}
            for band, (times, recalls, fallbacks, exact) in by_band.items()}


def _server_version(raw: Any) -> str:
    with raw.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version'), (SELECT extversion FROM "
                       "pg_extension WHERE extname = 'vector')")
        server, vector = cursor.fetchone()
    return f"PostgreSQL {server}, pgvector {vector}"


def _measure(raw: Any, config: FilteredConfig, work: Workload, strategies: list[str],
             progress: Progress) -> dict[str, Any]:
    table = f"lessons_filtered_scratch_{os.getpid()}"
    try:
        progress(f"{_server_version(raw)}: loading {config.n} lessons over {config.teams} "
                 "teams and building the index")
        load_s = _fill(raw, table, work, halfvec="halfvec" in strategies)
        result: dict[str, Any] = {"server": _server_version(raw), "load_and_index_s":
                                  round(load_s, 1), "index_mb": _index_mb(raw, f"{table}_hnsw")}
        # The shared index alone first; `new` after the teams' own indexes are built.
        ordered = [s for s in strategies if s != "new"] + (["new"] * ("new" in strategies))
        for strategy in ordered:
            if strategy == "new":
                progress("building the big teams' own indexes")
                result["team_indexes"] = _team_indexes(raw, table, work)
            _search(raw, table, strategy, config.ef_search, work)  # warm the cache
            progress(f"{len(work.queries)} filtered queries ({strategy})")
            result[strategy] = _search(raw, table, strategy, config.ef_search, work)
        if "halfvec" in strategies:
            result["halfvec_index_mb"] = _index_mb(raw, f"{table}_half")
        return result
    finally:
        with raw.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {table}")


@contextmanager
def old_server() -> Iterator[Any]:
    """A scratch PostgreSQL 16 + pgvector 0.6 from the previous wheel, or None without it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError:
            yield None
            return
    import psycopg
    from pgvector.psycopg import register_vector

    # The wheel logs each pg_ctl call at INFO, also from atexit once streams are closed.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    data = tempfile.mkdtemp(prefix="lessons-bench-pg16-")
    os.chmod(data, 0o755)  # noqa: S103 - as root the server runs as its own user
    server = pgserver.get_server(data, cleanup_mode="stop")
    try:
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
        with psycopg.connect(f"postgresql://postgres@/postgres?host={data}",
                             autocommit=True) as raw:
            register_vector(raw)
            yield raw
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def run_filtered(config: FilteredConfig, progress: Progress = lambda _: None) -> dict[str, Any]:
    work = workload(config)
    sizes = [len(members) for members in work.members.values()]
    result: dict[str, Any] = {
        "n": config.n, "teams": config.teams, "queries_per_band": config.queries_per_band,
        "ef_search": config.ef_search,
        "teams_per_band": {band_name(lo, hi): sum(lo <= s and (hi is None or s <= hi)
                                                  for s in sizes) for lo, hi in BANDS}}
    with scratch_connection() as raw:
        strategies = ["new", "iterative", "halfvec"] if config.halfvec else ["new", "iterative"]
        result["new_server"] = _measure(raw, config, work, strategies, progress)
    if config.old_server:
        with old_server() as raw:
            result["old_server"] = (
                _measure(raw, config, work, ["old"], progress) if raw is not None
                else "not measured: the previous wheel is not installed (pip install "
                     "pgserver==0.1.4)")
    result["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return result
