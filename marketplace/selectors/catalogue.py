"""The catalogue: hybrid search (full text and summary embeddings, merged by reciprocal
rank), the filtered and sorted pages, the tag facets.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import DEFAULT_DB_ALIAS
from django.db.models import Count, F, Func, QuerySet
from django.db.models.expressions import RawSQL
from pgvector import Vector
from pgvector.django import CosineDistance

from autocoder.compiled_queries import Bound, fetch_rows, fetch_rows_bound
from autocoder.lessons.embedder import DIMENSIONS
from marketplace.models import Plugin, PluginVersion
from marketplace.selectors.visibility import Viewer, visible_q
from teams.models import Team

SORTS = {
    "relevance": "Relevance",
    "installs": "Most installed",
    "rating": "Best rated",
    "updated": "Recently updated",
}
SORT_ORDER = {
    # Each matches an index of Plugin (models.py), so a page is read in index order.
    "installs": ("-install_count", "id"),
    "rating": ("-rating_avg", "-rating_count", "id"),
    "updated": ("-updated_at", "id"),
    # Without a query "relevance" has nothing to be relevant to: popular first.
    "relevance": ("-install_count", "id"),
}
PER_PAGE = 20
COUNT_CAP = 1000

# Each retriever contributes its best CANDIDATES; reciprocal rank fusion with the usual k=60
# (Cormack et al.) merges them without having to calibrate ts_rank against cosine similarity.
CANDIDATES = 200
RRF_K = 60

# Below this cosine similarity (all-MiniLM-L6-v2) a summary has nothing to do with the query:
# measured on tests/marketplace's catalogue, unrelated pairs stay under 0.25.
MIN_SIMILARITY = 0.25
# A plugin none of the query's words appear in must sound clearly alike to be listed next to
# plugins that have the words: "monthly expenses" is 0.30 from weekly-scheduler's "a week of
# meetings", which tied with (and, older, beat) the expense plugins (issue 28, item 9). Only
# when no plugin has any of the words does everything above MIN_SIMILARITY count.
ALIKE_WITHOUT_WORDS = 0.35
MAX_QUERY_TERMS = 12
MAX_FACET_TAGS = 30
CARD_FIELDS = ("id", "name", "normalized_name", "summary", "category", "tags", "visibility",
               "install_count", "rating_avg", "rating_count", "updated_at", "team__name",
               "team__slug", "latest_version__version")


@dataclass(frozen=True)
class SearchParams:
    q: str = ""
    category: str = ""
    tag: str = ""
    sort: str = "relevance"
    page: int = 1


@dataclass
class SearchPage:
    results: list[Plugin]
    total: int
    page: int
    pages: int
    params: SearchParams
    capped: bool = False  # more than `total` match; the count stopped at COUNT_CAP

    @property
    def has_previous(self) -> bool:
        return self.page > 1

    @property
    def has_next(self) -> bool:
        return self.page < self.pages


def clean_params(*, q: str = "", category: str = "", tag: str = "", sort: str = "",
                 page: str | int = 1) -> SearchParams:
    """Parameters from a query string, with anything unknown replaced by its default."""
    try:
        number = max(1, min(int(page), 10_000))
    except (TypeError, ValueError):
        number = 1
    return SearchParams(
        q=" ".join(str(q).split())[:200],
        category=category if category in Plugin.Category.values else "",
        tag=str(tag).strip().lower()[:30],
        sort=sort if sort in SORTS else "relevance",
        page=number,
    )


def catalogue_search(*, viewer: Viewer, params: SearchParams,
                     per_page: int = PER_PAGE) -> SearchPage:
    """Hybrid search: full text (name, summary, tags, README) and summary embeddings, merged by
    reciprocal rank; or, without a query, the filtered catalogue in the chosen order."""
    if not params.q:
        return _ordered_page(_filtered(viewer, params), SORT_ORDER[params.sort], params, per_page)
    # The same SQL for everyone who sees the same teams with the same filters: compiled once
    # (the queryset is built only then).
    key = ("catalogue", viewer.member_of, viewer.reviewer_of, params.category, params.tag)
    ranked = hybrid_ranking(lambda: _filtered(viewer, params), params.q, key=key)
    if params.sort != "relevance":
        matched = _filtered(viewer, params).filter(id__in=ranked)
        return _ordered_page(matched, SORT_ORDER[params.sort], params, per_page)
    pages = max(1, math.ceil(len(ranked) / per_page))
    page = min(params.page, pages)
    chosen = ranked[(page - 1) * per_page: page * per_page]
    rows = {p.id: p for p in card_plugins(chosen)}
    results = [rows[pk] for pk in chosen if pk in rows]
    return SearchPage(results=results, total=len(ranked), page=page, pages=pages,
                      params=params)


def _filtered(viewer: Viewer, params: SearchParams) -> QuerySet[Plugin]:
    queryset = Plugin.objects.filter(visible_q(viewer), latest_version__isnull=False)
    if params.category:
        queryset = queryset.filter(category=params.category)
    if params.tag:
        queryset = queryset.filter(tags__contains=[params.tag])
    return queryset


def _cards(queryset: QuerySet[Plugin]) -> QuerySet[Plugin]:
    return queryset.select_related("team", "latest_version").only(*CARD_FIELDS)


# The compiled card query is built with this list of ids, replaced by each page's own (no
# plugin has the id -1).
_IDS_SENTINEL = [-1]
# In the model's field order, which Model.from_db reads them in.
_CARD_PLUGIN = [f.attname for f in Plugin._meta.concrete_fields
                if f.attname in {*CARD_FIELDS, "team_id", "latest_version_id"}]
_CARD_COLUMNS = (*_CARD_PLUGIN, "team__name", "team__slug", "latest_version__version")


def card_plugins(ids: list[int]) -> list[Plugin]:
    """The plugins `ids` name, with what a result card shows (`_cards`' fields, the team's name
    and slug, the latest version's number), through one query compiled once: a search's page
    of results only sends its ids."""
    if not ids:
        return []

    def build() -> QuerySet[Plugin, tuple[Any, ...]]:
        among = RawSQL("SELECT unnest(%s::bigint[])", [_IDS_SENTINEL])
        return Plugin.objects.filter(id__in=among).values_list(*_CARD_COLUMNS)

    rows = fetch_rows_bound(("catalogue-cards",), build, (Bound(_IDS_SENTINEL, list(ids)),))
    plugins = []
    own = len(_CARD_PLUGIN)
    team_field, version_field = Plugin._meta.get_field("team"), Plugin._meta.get_field(
        "latest_version")
    for row in rows:
        plugin = Plugin.from_db(DEFAULT_DB_ALIAS, _CARD_PLUGIN, row[:own])
        team_name, team_slug, version = row[own:]
        # As select_related() leaves them: in the relations' caches, read without a query.
        team_field.set_cached_value(plugin, Team.from_db(
            DEFAULT_DB_ALIAS, ["id", "name", "slug"], (plugin.team_id, team_name, team_slug)))
        version_field.set_cached_value(plugin, None if plugin.latest_version_id is None else
                                       PluginVersion.from_db(DEFAULT_DB_ALIAS, ["id", "version"],
                                                             (plugin.latest_version_id, version)))
        plugins.append(plugin)
    return plugins


def _order(field: str) -> Any:
    if not field.startswith("-"):
        return F(field)
    return F(field[1:]).desc(nulls_last=True) if field == "-updated_at" else F(field[1:]).desc()


def _ordered_page(queryset: QuerySet[Plugin], order: tuple[str, ...], params: SearchParams,
                  per_page: int) -> SearchPage:
    # Counting stops at COUNT_CAP: "1000+ plugins" needs no scan of the whole catalogue.
    total = queryset[:COUNT_CAP + 1].count()
    capped = total > COUNT_CAP
    total = min(total, COUNT_CAP)
    pages = max(1, math.ceil(total / per_page))
    page = min(params.page, pages)
    ordering = [_order(o) for o in order]
    rows = list(_cards(queryset).order_by(*ordering)[(page - 1) * per_page: page * per_page])
    return SearchPage(results=rows, total=total, page=page, pages=pages, params=params,
                      capped=capped)


def hybrid_ranking(among: Callable[[], QuerySet[Plugin]], q: str, *,
                   key: tuple[Hashable, ...] | None = None) -> list[int]:
    """Ids of the plugins of `among()` matching `q`, best first: RRF of the text and the
    embedding rankings; while some plugin has any of the query's words, one without them must
    sound clearly alike (ALIKE_WITHOUT_WORDS) to be listed. `key`: names everything `among()`
    is built from, to compile its two queries once (each search then only sends its words and
    its embedding); None: built by the ORM each time."""
    text = _text_ranking(among, q, key)
    near = _vector_ranking(among, q, key)
    if text:
        with_words = set(text)
        near = [(pk, distance) for pk, distance in near
                if pk in with_words or 1.0 - distance >= ALIKE_WITHOUT_WORDS]
    lists = [text, [pk for pk, _ in near]]
    scores: dict[int, float] = {}
    for ranking in lists:
        for position, pk in enumerate(ranking, start=1):
            scores[pk] = scores.get(pk, 0.0) + 1.0 / (RRF_K + position)
    return sorted(scores, key=lambda pk: (-scores[pk], pk))


def text_terms(q: str) -> str:
    """Any of the words (OR), the last one also as a prefix, so partial names match while
    typing; the words are reduced to [a-z0-9] so the raw tsquery syntax cannot be injected.
    "" when `q` has no word."""
    terms = re.findall(r"[a-z0-9]+", q.lower())[:MAX_QUERY_TERMS]
    if not terms:
        return ""
    parts = terms[:-1] + [f"{terms[-1]}:*" if len(terms[-1]) >= 3 else terms[-1]]
    return " | ".join(parts)


def text_query(q: str) -> SearchQuery | None:
    terms = text_terms(q)
    return SearchQuery(terms, search_type="raw", config="english") if terms else None


# What the compiled rankings are built with, replaced by each search's own (see
# compiled_queries.fetch_rows_bound): no search produces them.
_TERMS_SENTINEL = "autocoder_search_terms_sentinel"
_VECTOR_SENTINEL = [0.000123] * DIMENSIONS


def _text_matches(queryset: QuerySet[Plugin], terms: str) -> QuerySet[Plugin, int]:
    query = SearchQuery(terms, search_type="raw", config="english")
    rank = SearchRank(F("search_vector"), query, weights=[0.05, 0.2, 0.5, 1.0])
    matches = queryset.filter(search_vector=query).annotate(rank=rank)
    return matches.order_by("-rank", "id").values_list("id", flat=True)[:CANDIDATES]


def _text_ranking(among: Callable[[], QuerySet[Plugin]], q: str,
                  key: tuple[Hashable, ...] | None) -> list[int]:
    terms = text_terms(q)
    if not terms:
        return []
    if key is None:
        return list(_text_matches(among(), terms))
    rows = fetch_rows_bound(("text", *key), lambda: _text_matches(among(), _TERMS_SENTINEL),
                            (Bound(_TERMS_SENTINEL, terms),))
    return [pk for (pk,) in rows]


def _near(queryset: QuerySet[Plugin],
          vector: list[float]) -> QuerySet[Plugin, tuple[int, float]]:
    distance = CosineDistance("summary_embedding", vector)
    near = (queryset.filter(summary_embedding__isnull=False).annotate(distance=distance)
            .filter(distance__lt=1.0 - MIN_SIMILARITY))
    return near.order_by("distance", "id").values_list("id", "distance")[:CANDIDATES]


def _vector_ranking(among: Callable[[], QuerySet[Plugin]], q: str,
                    key: tuple[Hashable, ...] | None) -> list[tuple[int, float]]:
    """(id, cosine distance) of the plugins whose summary sounds like `q`, nearest first."""
    vector = query_embedding(q).tolist()
    if key is None:
        return [(pk, float(distance)) for pk, distance in _near(among(), vector)]
    # The parameter CosineDistance makes of a vector: its text.
    rows = fetch_rows_bound(("near", *key), lambda: _near(among(), _VECTOR_SENTINEL),
                            (Bound(Vector(_VECTOR_SENTINEL).to_text(), Vector(vector).to_text()),))
    return [(pk, float(distance)) for (pk, distance) in rows]


@functools.lru_cache(maxsize=512)
def _cached_embedding(q: str) -> bytes:
    from autocoder.lessons.embedder import embed_text

    return np.asarray(embed_text(q), dtype=np.float32).tobytes()


def search_model_warm() -> None:
    """Load the search model now (a web process at start-up), not on the first search: loading
    torch and the model takes seconds, which the first searcher of each process would wait."""
    query_embedding("warm up")


def query_embedding(q: str) -> np.ndarray:
    """The query's embedding; repeated queries (pagination, sort changes) reuse it."""
    return np.frombuffer(_cached_embedding(" ".join(q.lower().split())), dtype=np.float32)


def catalogue_facets(viewer: Viewer) -> dict[str, list[tuple[str, int]]]:
    """The most used tags among what the viewer can see, with counts (aggregated in SQL)."""
    def most_used() -> QuerySet[Plugin, tuple[str, int]]:
        visible = Plugin.objects.filter(visible_q(viewer), latest_version__isnull=False)
        return (visible.annotate(tag=Func(F("tags"), function="unnest")).values("tag")
                .annotate(n=Count("id")).order_by("-n", "tag")
                .values_list("tag", "n")[:MAX_FACET_TAGS])

    # The same SQL for everyone who sees the same teams: compiled once (it is on every search).
    key = ("catalogue-facets", viewer.member_of, viewer.reviewer_of)
    return {"tags": [(tag, n) for tag, n in fetch_rows(key, most_used)]}
