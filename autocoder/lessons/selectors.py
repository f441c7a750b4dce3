"""Reads for lessons: retrieval for the engine, browsing and search for the pages.

Scope rule everywhere: a team sees its own lessons and the global ones, never another team's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection, transaction
from django.db.models import Q, QuerySet, Value
from pgvector.django import CosineDistance

from autocoder.lessons import team_indexes
from autocoder.lessons.embedder import embed_text, embedder_identity
from autocoder.lessons.extraction import clip, exception_name, query_text
from autocoder.lessons.models import Lesson, LessonSource
from autocoder.lessons.types import RetrievedLesson
from autocoder.signatures import normalize_error_signature

__all__ = ["RetrievedLesson", "lessons_prompt_block", "lessons_retrieve"]

# Below this cosine similarity a lesson is noise for the query. Tuned with the real MiniLM
# embedder on example lessons: the same mistake asked with another run's traceback scored
# 0.44-0.78, a similar task's approach 0.54, unrelated errors (ZeroDivisionError,
# PermissionError against lessons about KeyError, missing modules, JSON) at most 0.34.
RETRIEVAL_MIN_SIMILARITY = 0.38
# For an error query, a mistake with the same exception gets this much extra relevance: by
# cosine alone a lesson about another exception often came close (a dateutil import lesson
# scored 0.44 for a KeyError traceback, as much as the right lesson worded differently).
SAME_ERROR_BONUS = 0.1
# MMR trade-off: 1.0 ranks by relevance only, lower values favour lessons unlike those chosen.
# At 0.6 a near copy (cosine 0.99) of a chosen lesson loses to a distinct lesson that is up to
# about 0.25 less similar to the query; at 0.7 near copies still won against 0.18 less.
MMR_LAMBDA = 0.6
# Reliability scales relevance between x0.8 (never helped) and x1.2 (always helped), so a
# proven lesson beats a slightly closer unproven one but never an unrelated one.
RELIABILITY_SPREAD = 0.4
CANDIDATE_POOL_FACTOR = 4
MIN_CANDIDATE_POOL = 20
# hnsw.ef_search for retrieval: at 100k lessons lessons_bench measured recall@10 0.991-0.996
# with 100 and 0.983 with 60 (ef_construction 128), at a p95 of a few milliseconds.
HNSW_EF_SEARCH = 100
# Filtered searches (one team's lessons) keep scanning the index until enough rows pass the
# filter. lessons_bench --teams measured relaxed order (re-sorted here) above strict order in
# recall at the same ef_search, e.g. 0.98 against 0.96 for teams of 1,000-9,999 lessons among
# 100,000 (docs/lessons.md).
HNSW_ITERATIVE_SCAN = "relaxed_order"
# Up to this many lessons in scope, an exact scan (the scope's rows found through the team
# index, every distance computed) is complete and about as fast as the index: lessons_bench
# --teams measured it faster up to a few thousand lessons, and the iterative scan faster
# beyond (docs/lessons.md, "Searches filtered to one team").
EXACT_SCAN_MAX_ROWS = 4000
# A search through the index asks it for at least this many rows and keeps the closest: with
# relaxed order the first rows are only nearly the nearest. At a million lessons, teams of
# 1,000-9,999 searched through the index got recall@10 0.98 with 40 rows against 0.96 with
# 10 (docs/lessons.md).
INDEX_MIN_FETCH = 40
PROMPT_CHARS = 400


@dataclass(frozen=True)
class ScoredLesson:
    lesson: Lesson
    similarity: float


def _scope(team_id: int | None) -> Q:
    return Q(team__isnull=True) if team_id is None else Q(team_id=team_id) | Q(team__isnull=True)


def lessons_in_scope(*, team_id: int | None) -> QuerySet[Lesson]:
    """Lessons a team may use: its own and the global ones, retired ones excluded."""
    return Lesson.objects.filter(_scope(team_id), retired_at__isnull=True)


def lessons_nearest(*, team_id: int | None, vector: Sequence[float] | np.ndarray, limit: int,
                    kind: str | None = None) -> list[ScoredLesson]:
    """The `limit` lessons in scope closest to `vector` by cosine, closest first.

    A team with an HNSW index of its own (TEAM_INDEX_MIN_ROWS lessons or more, built by the
    watchdog: autocoder/lessons/team_indexes.py) is searched through it, and the global
    lessons beside it. Otherwise a scope of at most EXACT_SCAN_MAX_ROWS lessons (most teams)
    is scanned exactly: its rows come through the team index, and computing their distances
    is complete and cheap. A larger scope goes through the shared HNSW index, which filters
    after it searches; with pgvector 0.8's iterative scans it goes on searching until `limit`
    rows pass the filter. Should a search through an index still give up
    (hnsw.max_scan_tuples), the exact scan gives the true answer.
    Only lessons embedded by the current model are compared (see `lessons_reembed`).
    """
    usable = Lesson.objects.filter(retired_at__isnull=True, embedded_with=embedder_identity())
    if kind:
        usable = usable.filter(kind=kind)
    distance = CosineDistance("embedding", list(map(float, vector)))
    scope = usable.filter(_scope(team_id))
    big = team_indexes.TEAM_INDEX_MIN_ROWS
    if team_id is not None and _owned_rows(Q(team_id=team_id), kind=kind, cap=big) >= big \
            and team_indexes.team_index_ready(team_id):
        ours = _through_index(usable.filter(team_id=team_id), distance, limit)
        shared = usable.filter(team__isnull=True)
        if _owned_rows(Q(team__isnull=True), kind=kind, cap=EXACT_SCAN_MAX_ROWS) \
                <= EXACT_SCAN_MAX_ROWS:
            found = _exact(shared, distance, limit) + ours
        else:
            found = _through_index(shared, distance, limit) + ours
        if len(ours) < limit:
            return _exact(scope, distance, limit)
        return sorted(found, key=lambda scored: -scored.similarity)[:limit]
    if _scope_rows(team_id=team_id, kind=kind, cap=EXACT_SCAN_MAX_ROWS) <= EXACT_SCAN_MAX_ROWS:
        return _exact(scope, distance, limit)
    found = _through_index(scope, distance, limit)
    return found if len(found) == limit else _exact(scope, distance, limit)


def _exact(rows: QuerySet[Lesson], distance: CosineDistance, limit: int) -> list[ScoredLesson]:
    # Ordering by an expression no index can serve makes the scan exact.
    nearest = rows.annotate(distance=distance + Value(0.0)).order_by("distance")[:limit]
    return [ScoredLesson(lesson=row, similarity=1.0 - float(row.distance)) for row in nearest]


def _through_index(rows: QuerySet[Lesson], distance: CosineDistance,
                   limit: int) -> list[ScoredLesson]:
    """The closest `limit` of `rows` through an HNSW index (the team's own when the filter
    names one team that has it, else the shared one), with iterative scans; fewer rows only
    when the index gave up."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL hnsw.ef_search = %s", [max(HNSW_EF_SEARCH, limit)])
            cursor.execute("SET LOCAL hnsw.iterative_scan = %s", [HNSW_ITERATIVE_SCAN])
        fetch = max(limit, INDEX_MIN_FETCH)
        nearest = list(rows.annotate(distance=distance).order_by("distance")[:fetch])
    scored = [ScoredLesson(lesson=row, similarity=1.0 - float(row.distance)) for row in nearest]
    return sorted(scored, key=lambda one: -one.similarity)[:limit]


def _scope_rows(*, team_id: int | None, kind: str | None, cap: int) -> int:
    """How many lessons the scope holds, counted up to just past `cap` from the team index
    alone (retired lessons and other embedders' included): enough to choose the scan."""
    owners = [Q(team__isnull=True)] if team_id is None else [Q(team_id=team_id),
                                                              Q(team__isnull=True)]
    total = 0
    for owner in owners:
        total += _owned_rows(owner, kind=kind, cap=cap - total)
        if total > cap:
            break
    return total


def _owned_rows(owner: Q, *, kind: str | None, cap: int) -> int:
    """Lessons of one owner (a team, or nobody), counted up to cap + 1 from the team index."""
    rows = Lesson.objects.filter(owner)
    if kind:
        rows = rows.filter(kind=kind)
    return rows.order_by().values("team_id")[:max(cap, 0) + 1].count()


def _rank(scored: ScoredLesson, query_error: str | None) -> float:
    lesson = scored.lesson
    factor = 1.0 - RELIABILITY_SPREAD / 2 + RELIABILITY_SPREAD * float(lesson.reliability)
    same_error = query_error is not None and exception_name(lesson.error_signature) == query_error
    return scored.similarity * factor + (SAME_ERROR_BONUS if same_error else 0.0)


def mmr_select(candidates: list[ScoredLesson], k: int, lambda_: float = MMR_LAMBDA,
               query_error: str | None = None) -> list[ScoredLesson]:
    """Maximal marginal relevance: each pick is relevant and unlike the lessons already chosen."""
    if not candidates or k <= 0:
        return []
    vectors = np.array([np.asarray(c.lesson.embedding, dtype=np.float32) for c in candidates])
    pairwise = vectors @ vectors.T
    relevance = np.array([_rank(c, query_error) for c in candidates])
    chosen: list[int] = []
    remaining = list(range(len(candidates)))
    while remaining and len(chosen) < k:
        def score(i: int) -> float:
            redundancy = max((pairwise[i, j] for j in chosen), default=0.0)
            return lambda_ * relevance[i] - (1 - lambda_) * redundancy

        best = max(remaining, key=score)
        chosen.append(best)
        remaining.remove(best)
    return [candidates[i] for i in chosen]


def lessons_retrieve(*, team_id: int | None, query: str, k: int = 5,
                     min_similarity: float | None = None) -> list[RetrievedLesson]:
    """Lessons worth putting in a prompt for `query` (a spec summary or an error text): the
    team's own and the global ones (`team_id=None`: global only), retired ones never.

    Read-only: the caller reports what it used with services.lessons_mark_retrieved.
    """
    if k <= 0 or not (query or "").strip():
        return []
    threshold = RETRIEVAL_MIN_SIMILARITY if min_similarity is None else min_similarity
    vector = embed_text(query_text(query))
    pool = max(k * CANDIDATE_POOL_FACTOR, MIN_CANDIDATE_POOL)
    candidates = [c for c in lessons_nearest(team_id=team_id, vector=vector, limit=pool)
                  if c.similarity >= threshold]
    query_error = exception_name(normalize_error_signature(query))
    return [_retrieved(c) for c in mmr_select(candidates, k, query_error=query_error)]


def _retrieved(scored: ScoredLesson) -> RetrievedLesson:
    lesson = scored.lesson
    return RetrievedLesson(
        id=lesson.pk, kind=lesson.kind, title=lesson.title, avoidance_rule=lesson.avoidance_rule,
        resolution=lesson.resolution, error_signature=lesson.error_signature,
        similarity=round(scored.similarity, 4), reliability=round(float(lesson.reliability), 4),
    )


def _repeats(rule: str, resolution: str) -> bool:
    """Whether the rule already quotes the whole resolution (deterministic rules quote a
    one-sentence fix), so the prompt need not repeat it."""
    whole = clip(resolution, PROMPT_CHARS).rstrip(".…").lower()
    return bool(whole) and whole in clip(rule, 10 * PROMPT_CHARS).lower()


def lessons_prompt_block(lessons: list[RetrievedLesson]) -> str:
    """The prompt text for retrieved lessons: one bullet each with its rule and resolution."""
    if not lessons:
        return ""
    bullets = []
    for lesson in lessons:
        negative = lesson.kind == Lesson.Kind.NEGATIVE
        label, then = ("Avoid", "What fixed it") if negative else ("Worked before", "Approach")
        line = f"- {label}: {clip(lesson.title, 160)}. {clip(lesson.avoidance_rule, PROMPT_CHARS)}"
        if lesson.resolution and not _repeats(lesson.avoidance_rule, lesson.resolution):
            line += f" {then}: {clip(lesson.resolution, PROMPT_CHARS)}"
        bullets.append(line)
    header = "Lessons learned in earlier runs (follow them unless the spec says otherwise):"
    return "\n".join([header, *bullets])


# --- pages ----------------------------------------------------------------------------------

def lessons_browse(*, team_id: int | None, kind: str = "", tag: str = "",
                   retired: bool = False) -> QuerySet[Lesson]:
    """The team's lessons and the global ones, newest first, optionally filtered."""
    queryset = Lesson.objects.filter(_scope(team_id), retired_at__isnull=not retired)
    if kind:
        queryset = queryset.filter(kind=kind)
    if tag:
        queryset = queryset.filter(tags__contains=[tag])
    return queryset.select_related("team").order_by("-updated_at", "-id")


def lessons_text_search(*, team_id: int | None, text: str) -> QuerySet[Lesson]:
    """Full-text search (English stemming) plus substring matches on title and error signature."""
    vector = SearchVector("title", "error_signature", "avoidance_rule", "resolution",
                          "failed_approach", "task_context", config="english")
    query = SearchQuery(text, search_type="websearch", config="english")
    matches = Q(search=query) | Q(title__icontains=text) | Q(error_signature__icontains=text)
    return (lessons_in_scope(team_id=team_id).annotate(search=vector)
            .filter(matches).annotate(rank=SearchRank(vector, query))
            .select_related("team").order_by("-rank", "-updated_at"))


def lessons_semantic_search(*, team_id: int | None, text: str, limit: int = 20,
                            min_similarity: float = 0.2) -> list[ScoredLesson]:
    """Closest lessons by meaning; a lower bar than retrieval because a person reads them."""
    vector = embed_text(query_text(text))
    return [s for s in lessons_nearest(team_id=team_id, vector=vector, limit=limit)
            if s.similarity >= min_similarity]


def lesson_tags(*, team_id: int | None, limit: int = 100) -> list[str]:
    """The tags in use in the team's scope, most used first (for the filter)."""
    scope = "team_id IS NULL" + ("" if team_id is None else " OR team_id = %s")
    params = ([] if team_id is None else [team_id]) + [limit]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tag FROM lessons_lesson, unnest(tags) AS tag "  # noqa: S608 - fixed text
            f"WHERE retired_at IS NULL AND ({scope}) "
            "GROUP BY tag ORDER BY count(*) DESC, tag LIMIT %s", params)
        return [row[0] for row in cursor.fetchall()]


def lesson_sources_for(*, lesson: Lesson,
                       user: AbstractBaseUser | AnonymousUser) -> QuerySet[LessonSource]:
    """The runs behind a lesson that the user may know about: those of the user's teams."""
    if not user.is_authenticated:
        return LessonSource.objects.none()
    return lesson.sources.filter(team__memberships__user_id=user.pk).order_by("created_at")
