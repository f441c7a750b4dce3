"""The lessons retrieval benchmark behind `manage.py lessons_bench`.

It fills a scratch table (never the real lessons table) with clustered synthetic vectors shaped
like lesson embeddings, builds the same HNSW index as the Lesson model, and compares index
search with exact search: latency per query as the application sees it (round trip included)
and recall@10. It also measures the real embedder's throughput on lesson-like texts.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from django.db import connection

from autocoder.lessons.embedder import DIMENSIONS, embed_texts
from autocoder.lessons.models import HNSW_EF_CONSTRUCTION, HNSW_M
from autocoder.lessons.selectors import HNSW_EF_SEARCH

TOP_K = 10
COPY_BATCH_ROWS = 10_000


def maintenance_work_mem(n: int) -> str:
    """Enough for the whole HNSW graph of n x 384 vectors to be built in memory (a build that
    spills to disk is several times slower): about 2.3 KB per vector, at least 1 GB;
    PostgreSQL allocates it only during CREATE INDEX."""
    return f"{max(1024, (n * 2400) // 2**20)}MB"

# Spread of a lesson around its topic centre: cosine to the centre is about 1/sqrt(1+s^2) = 0.86
# and between two lessons of one topic about 0.74, like paraphrased lessons with MiniLM.
CLUSTER_SPREAD = 0.6


@dataclass(frozen=True)
class BenchConfig:
    n: int
    queries: int = 200
    m: int = HNSW_M
    ef_construction: int = HNSW_EF_CONSTRUCTION
    ef_search: int = HNSW_EF_SEARCH
    clusters: int | None = None
    embed_texts: int = 512
    seed: int = 7


@dataclass(frozen=True)
class BenchResult:
    n: int
    queries: int
    p50_ms: float
    p95_ms: float
    exact_p50_ms: float
    exact_p95_ms: float
    recall_at_10: float
    index_build_s: float
    insert_s: float
    embed_per_s: float | None
    embed_texts: int
    clusters: int
    m: int
    ef_construction: int
    ef_search: int
    index_used: bool
    load_avg_1m: float  # the machine's load when the queries ran: latency depends on it

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def clustered_vectors(n: int, clusters: int, rng: np.random.Generator,
                      weights: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """`n` unit vectors around `centres`, topics drawn with uneven `weights`."""
    labels = rng.choice(clusters, size=n, p=weights)
    noise = rng.standard_normal((n, DIMENSIONS)).astype(np.float32) / np.sqrt(DIMENSIONS)
    vectors = centres[labels] + CLUSTER_SPREAD * noise
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def synthetic_data(config: BenchConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """(table vectors, query vectors, number of clusters); queries are not in the table."""
    rng = np.random.default_rng(config.seed)
    clusters = config.clusters or max(8, min(500, config.n // 300))
    centres = rng.standard_normal((clusters, DIMENSIONS)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    # A few common mistakes and a long tail of rare ones: log-normal topic sizes.
    weights = rng.lognormal(0.0, 1.0, clusters)
    weights /= weights.sum()
    data = clustered_vectors(config.n, clusters, rng, weights, centres)
    queries = clustered_vectors(config.queries, clusters, rng, weights, centres)
    return data, queries, clusters


@contextmanager
def scratch_connection() -> Iterator[Any]:
    """A separate psycopg connection, so vector adapters and settings stay off Django's."""
    from pgvector.psycopg import register_vector

    raw = connection.get_new_connection(connection.get_connection_params())
    raw.autocommit = True
    try:
        register_vector(raw)
        yield raw
    finally:
        raw.close()


def _fill(raw: Any, table: str, data: np.ndarray) -> float:
    started = time.perf_counter()
    with raw.cursor() as cursor:
        cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        # UNLOGGED: scratch data needs no crash safety, and skipping WAL spares the shared disk.
        cursor.execute(f"CREATE UNLOGGED TABLE {table} (id bigint PRIMARY KEY, "
                       f"embedding vector({DIMENSIONS}) NOT NULL)")
        for start in range(0, len(data), COPY_BATCH_ROWS):
            with cursor.copy(f"COPY {table} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as cp:
                cp.set_types(["int8", "vector"])
                for offset, vector in enumerate(data[start:start + COPY_BATCH_ROWS]):
                    cp.write_row([start + offset, vector])
        cursor.execute(f"ANALYZE {table}")
    return time.perf_counter() - started


def _build_index(raw: Any, table: str, config: BenchConfig) -> float:
    started = time.perf_counter()
    with raw.cursor() as cursor:
        cursor.execute(f"SET maintenance_work_mem = '{maintenance_work_mem(config.n)}'")
        cursor.execute(f"CREATE INDEX {table}_hnsw ON {table} USING hnsw "
                       f"(embedding vector_cosine_ops) WITH (m = {int(config.m)}, "
                       f"ef_construction = {int(config.ef_construction)})")
        cursor.execute(f"ANALYZE {table}")
    return time.perf_counter() - started


def _timed_queries(raw: Any, sql: str, setting: str,
                   queries: np.ndarray) -> tuple[list[float], list[list[int]]]:
    """Each query's wall time as a client sees it: one round trip, the setting made once."""
    timings, results = [], []
    with raw.cursor() as cursor:
        cursor.execute(setting)
        try:
            for query in queries:
                started = time.perf_counter()
                cursor.execute(sql, [query])
                ids = [row[0] for row in cursor.fetchall()]
                timings.append((time.perf_counter() - started) * 1000)
                results.append(ids)
        finally:
            cursor.execute("RESET ALL")
    return timings, results


def _index_used(raw: Any, sql: str, setting: str, query: np.ndarray) -> bool:
    with raw.cursor() as cursor:
        cursor.execute(setting)
        cursor.execute("EXPLAIN " + sql, [query])
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("RESET ALL")
    return "_hnsw" in plan


def lesson_like_texts(count: int, seed: int = 11) -> list[str]:
    """Texts shaped like the lessons extraction writes, for the embedder throughput."""
    rng = np.random.default_rng(seed)
    errors = ["KeyError: <val>", "TypeError: Object of type datetime is not JSON serializable",
              "ModuleNotFoundError: No module named <val>", "AssertionError: assert <n> == <n>",
              "ValueError: invalid literal for int() with base <n>: <val>",
              "AttributeError: <val> object has no attribute <val>"]
    fixes = ["normalise the key before the lookup", "return ISO strings instead of datetimes",
             "use only the standard library", "compare with the example output exactly",
             "validate the payload and raise ValueError", "parse numbers with Decimal"]
    texts = []
    for i in range(count):
        error, fix = errors[rng.integers(len(errors))], fixes[rng.integers(len(fixes))]
        texts.append(f"Mistake: {error.split(':')[0]}: {fix} (case {i})\nError: {error}\n"
                     f"Failed approach: the first attempt did not {fix} and the tests failed\n"
                     f"Fix: {fix}.\nRule: If you see \"{error}\": {fix}.")
    return texts


def embed_throughput(count: int) -> float:
    texts = lesson_like_texts(count)
    embed_texts(texts[:8])  # load the model and warm up outside the measurement
    started = time.perf_counter()
    embed_texts(texts)
    return count / (time.perf_counter() - started)


def _percentile(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3) if values else 0.0


def run_bench(config: BenchConfig, progress: Callable[[str], None] = lambda _: None
              ) -> BenchResult:
    if config.n < TOP_K or config.queries < 1:
        raise ValueError(f"--n must be at least {TOP_K} and --queries at least 1")
    data, queries, clusters = synthetic_data(config)
    table = f"lessons_bench_scratch_{os.getpid()}"
    sql = f"SELECT id FROM {table} ORDER BY embedding <=> %s LIMIT {TOP_K}"  # noqa: S608
    hnsw_setting = f"SET hnsw.ef_search = {int(config.ef_search)}"
    exact_setting = "SET enable_indexscan = off"
    with scratch_connection() as raw:
        try:
            progress(f"inserting {config.n} vectors in {clusters} clusters")
            insert_s = _fill(raw, table, data)
            progress(f"building HNSW (m={config.m}, ef_construction={config.ef_construction})")
            build_s = _build_index(raw, table, config)
            _timed_queries(raw, sql, hnsw_setting, queries[:10])  # warm the cache
            progress(f"{config.queries} queries, index and exact")
            hnsw_ms, hnsw_ids = _timed_queries(raw, sql, hnsw_setting, queries)
            exact_ms, exact_ids = _timed_queries(raw, sql, exact_setting, queries)
            index_used = _index_used(raw, sql, hnsw_setting, queries[0])
            load = os.getloadavg()[0]
        finally:
            with raw.cursor() as cursor:
                cursor.execute(f"DROP TABLE IF EXISTS {table}")
    recall = np.mean([len(set(a) & set(b)) / TOP_K for a, b in zip(hnsw_ids, exact_ids,
                                                                     strict=True)])
    embed_rate = None
    if config.embed_texts > 0:
        progress(f"embedding {config.embed_texts} lesson texts")
        embed_rate = round(embed_throughput(config.embed_texts), 1)
    return BenchResult(
        n=config.n, queries=config.queries, p50_ms=_percentile(hnsw_ms, 50),
        p95_ms=_percentile(hnsw_ms, 95), exact_p50_ms=_percentile(exact_ms, 50),
        exact_p95_ms=_percentile(exact_ms, 95), recall_at_10=round(float(recall), 4),
        index_build_s=round(build_s, 2), insert_s=round(insert_s, 2), embed_per_s=embed_rate,
        embed_texts=config.embed_texts, clusters=clusters, m=config.m,
        ef_construction=config.ef_construction, ef_search=config.ef_search,
        index_used=index_used, load_avg_1m=round(load, 2),
    )
