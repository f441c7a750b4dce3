"""Reads of the marketplace: who sees what, the catalogue search, plugin pages, the index.

Visibility rule, applied in every query through `visible_q` (docs/marketplace.md):
- public: everyone signed in to the portal, and the package index without a token;
- team: every member of the owner team, whatever their role;
- private: the owner team's reviewers and admins only.
Site staff get no extra reach here. Anything a viewer may not see is answered as missing (404).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, User
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db.models import Count, F, Func, Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from packaging.version import Version
from pgvector.django import CosineDistance

from autocoder.compiled_queries import fetch_rows
from marketplace.models import ApiToken, Artifact, Plugin, PluginVersion, Review, TryRequest
from marketplace.validation import normalize_name
from projects import approval_rules
from projects.models import Membership
from projects.selectors.approvals import who_decides
from projects.selectors.teams import request_memberships

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
MAX_QUERY_TERMS = 12
MAX_FACET_TAGS = 30
TOKEN_TOUCH_INTERVAL = timedelta(minutes=1)
CARD_FIELDS = ("id", "name", "normalized_name", "summary", "category", "tags", "visibility",
               "install_count", "rating_avg", "rating_count", "updated_at", "team__name",
               "team__slug", "latest_version__version")


# -- who sees what -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Viewer:
    user_id: int | None = None
    member_of: frozenset[int] = frozenset()
    reviewer_of: frozenset[int] = frozenset()
    roles: dict[int, str] = field(default_factory=dict, compare=False)

    @property
    def is_anonymous(self) -> bool:
        return self.user_id is None

    def is_member(self, team_id: int) -> bool:
        return team_id in self.member_of

    def can_review(self, team_id: int) -> bool:
        return team_id in self.reviewer_of

    def is_admin(self, team_id: int) -> bool:
        return self.roles.get(team_id) == Membership.Role.ADMIN


ANONYMOUS = Viewer()


def viewer_for(user: AbstractBaseUser | AnonymousUser | None) -> Viewer:
    if user is None or not user.is_authenticated:
        return ANONYMOUS
    roles = dict(Membership.objects.filter(user_id=user.pk).values_list("team_id", "role"))
    return _viewer(user.pk, roles)


def request_viewer(request: HttpRequest) -> Viewer:
    """`viewer_for` the request's user, from the memberships the request has read already for
    the navigation (one query per page, not two)."""
    if not request.user.is_authenticated:
        return ANONYMOUS
    return viewer_of(request.user.pk, request_memberships(request))


def viewer_of(user_id: int | None, memberships: Iterable[Membership]) -> Viewer:
    """`viewer_for` from memberships the caller has read already (no query)."""
    return _viewer(user_id, {m.team_id: m.role for m in memberships})


def _viewer(user_id: int | None, roles: dict[int, str]) -> Viewer:
    reviewers = {Membership.Role.REVIEWER, Membership.Role.ADMIN}
    return Viewer(user_id=user_id, member_of=frozenset(roles),
                  reviewer_of=frozenset(t for t, role in roles.items() if role in reviewers),
                  roles=roles)


def visible_q(viewer: Viewer, prefix: str = "") -> Q:
    q = Q(**{f"{prefix}visibility": Plugin.Visibility.PUBLIC})
    if viewer.member_of:
        q |= Q(**{f"{prefix}visibility": Plugin.Visibility.TEAM,
                  f"{prefix}team_id__in": sorted(viewer.member_of)})
    if viewer.reviewer_of:
        q |= Q(**{f"{prefix}visibility": Plugin.Visibility.PRIVATE,
                  f"{prefix}team_id__in": sorted(viewer.reviewer_of)})
    return q


def can_see(viewer: Viewer, plugin: Plugin) -> bool:
    if plugin.visibility == Plugin.Visibility.PUBLIC:
        return True
    if plugin.visibility == Plugin.Visibility.TEAM:
        return viewer.is_member(plugin.team_id)
    return viewer.can_review(plugin.team_id)


def plugins_visible(viewer: Viewer) -> QuerySet[Plugin]:
    """Plugins with at least one published version that `viewer` may see."""
    return Plugin.objects.filter(visible_q(viewer), published_at__isnull=False)


def plugin_for_viewer(viewer: Viewer, name: str) -> Plugin | None:
    """The plugin called `name` (any spelling) if the viewer may see it and it was published;
    team members also reach their team's plugins that are still awaiting their first approval."""
    plugin = (Plugin.objects.select_related("team", "latest_version")
              .filter(normalized_name=normalize_name(name)).first())
    if plugin is None or not can_see(viewer, plugin):
        return None
    if plugin.published_at is None and not viewer.is_member(plugin.team_id):
        return None
    return plugin


# -- the catalogue -------------------------------------------------------------------------------


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
    base = _filtered(viewer, params)
    if not params.q:
        return _ordered_page(base, SORT_ORDER[params.sort], params, per_page)
    ranked = hybrid_ranking(base, params.q)
    if params.sort != "relevance":
        matched = base.filter(id__in=ranked)
        return _ordered_page(matched, SORT_ORDER[params.sort], params, per_page)
    pages = max(1, math.ceil(len(ranked) / per_page))
    page = min(params.page, pages)
    chosen = ranked[(page - 1) * per_page: page * per_page]
    rows = {p.id: p for p in _cards(Plugin.objects.filter(id__in=chosen))}
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


def hybrid_ranking(queryset: QuerySet[Plugin], q: str) -> list[int]:
    """Plugin ids matching `q`, best first: RRF of the text and the embedding rankings."""
    lists = [_text_ranking(queryset, q), _vector_ranking(queryset, q)]
    scores: dict[int, float] = {}
    for ranking in lists:
        for position, pk in enumerate(ranking, start=1):
            scores[pk] = scores.get(pk, 0.0) + 1.0 / (RRF_K + position)
    return sorted(scores, key=lambda pk: (-scores[pk], pk))


def text_query(q: str) -> SearchQuery | None:
    """Any of the words (OR), the last one also as a prefix, so partial names match while
    typing; the words are reduced to [a-z0-9] so the raw tsquery syntax cannot be injected."""
    terms = re.findall(r"[a-z0-9]+", q.lower())[:MAX_QUERY_TERMS]
    if not terms:
        return None
    parts = terms[:-1] + [f"{terms[-1]}:*" if len(terms[-1]) >= 3 else terms[-1]]
    return SearchQuery(" | ".join(parts), search_type="raw", config="english")


def _text_ranking(queryset: QuerySet[Plugin], q: str) -> list[int]:
    query = text_query(q)
    if query is None:
        return []
    rank = SearchRank(F("search_vector"), query, weights=[0.05, 0.2, 0.5, 1.0])
    matches = queryset.filter(search_vector=query).annotate(rank=rank)
    return list(matches.order_by("-rank", "id").values_list("id", flat=True)[:CANDIDATES])


def _vector_ranking(queryset: QuerySet[Plugin], q: str) -> list[int]:
    vector = query_embedding(q)
    distance = CosineDistance("summary_embedding", vector.tolist())
    near = (queryset.filter(summary_embedding__isnull=False).annotate(distance=distance)
            .filter(distance__lt=1.0 - MIN_SIMILARITY))
    return list(near.order_by("distance", "id").values_list("id", flat=True)[:CANDIDATES])


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


# -- a plugin's page -----------------------------------------------------------------------------


def published_version_of_run(run_id: int) -> PluginVersion | None:
    """The newest published version built from run `run_id`, if any."""
    return (PluginVersion.objects.filter(run_id=run_id, status=PluginVersion.Status.PUBLISHED)
            .select_related("plugin").order_by("-pk").first())


def plugin_versions(plugin: Plugin, viewer: Viewer) -> list[PluginVersion]:
    """Published versions, newest first; the owner team also sees pending and rejected ones."""
    queryset = plugin.versions.defer("files").prefetch_related("artifacts")
    if not viewer.is_member(plugin.team_id):
        queryset = queryset.filter(status=PluginVersion.Status.PUBLISHED)
    return sorted(queryset, key=lambda v: (Version(v.version), v.id), reverse=True)


def plugin_version_for_viewer(plugin: Plugin, viewer: Viewer, version: str) -> PluginVersion | None:
    for candidate in plugin_versions(plugin, viewer):
        if candidate.version == version or Version(candidate.version) == _version_or_none(version):
            return candidate
    return None


def _version_or_none(text: str) -> Version | None:
    try:
        return Version(text)
    except ValueError:
        return None


def rates_as_publisher(viewer: Viewer, plugin: Plugin) -> bool:
    """The rating rule: everyone who may see a published plugin may rate it once; a member of
    the plugin's own team rates as its publisher, so that review is kept apart - shown to the
    team as its own feedback, never counted in the public rating (a team of one can still
    say what it thinks of its plugin, and nobody can raise its own average)."""
    return viewer.is_member(plugin.team_id)


def plugin_reviews(plugin: Plugin) -> QuerySet[Review]:
    """The public reviews: the ones the rating counts."""
    return plugin.reviews.filter(from_publisher=False).select_related("user").order_by(
        "-updated_at")


def publisher_reviews(plugin: Plugin) -> QuerySet[Review]:
    """The plugin team's own reviews (see `rates_as_publisher`), for that team's eyes."""
    return plugin.reviews.filter(from_publisher=True).select_related("user").order_by(
        "-updated_at")


def review_of(plugin: Plugin, user_id: int | None) -> Review | None:
    if user_id is None:
        return None
    return plugin.reviews.filter(user_id=user_id).first()


def version_decision_refusal(*, version: PluginVersion, user: AbstractBaseUser) -> str:
    """Why `user` may not decide the uploaded `version` now ("" when they may): the gates' rule
    (approval_rules.upload_refusal), with whoever submitted the version as the author of the
    change. Asked at every vote, again when the votes are counted, and by the version's page
    before it offers the decision buttons."""
    team = version.plugin.team
    membership = Membership.objects.filter(team=team, user_id=user.pk).first()
    return approval_rules.upload_refusal(membership=membership, team=team,
                                         submitted_by_id=version.submitted_by_id)


@dataclass(frozen=True)
class VersionGate:
    """What a pending version's page offers the viewer: the decision buttons when the approval
    rules let them decide, otherwise a plain line saying who can and who hears about it."""

    may_decide: bool
    who_decides: str


def version_gate(version: PluginVersion, user: AbstractBaseUser) -> VersionGate:
    """The gate of a pending version as `user` meets it: an upload's own gate, or the run's
    publish request for a generated version."""
    approval = version.approval
    author: User | None
    if approval is not None:
        membership = Membership.objects.filter(team_id=approval.project.team_id,
                                               user_id=user.pk).first()
        refusal = approval_rules.gate_refusal(membership=membership, approval=approval)
        deciders = approval_rules.gate_deciders(approval) if refusal else []
        author = approval.project.requester
        thing = "publish request"
    else:
        refusal = version_decision_refusal(version=version, user=user)
        deciders = (approval_rules.upload_deciders(team=version.plugin.team,
                                                   submitted_by_id=version.submitted_by_id)
                    if refusal else [])
        author, thing = version.submitted_by, "version"
    if not refusal:
        return VersionGate(may_decide=True, who_decides="")
    return VersionGate(may_decide=False, who_decides=who_decides(
        deciders=deciders, team_name=version.plugin.team.name, thing=thing,
        viewer_id=user.pk, author=author))


def pending_versions_for(viewer: Viewer) -> QuerySet[PluginVersion]:
    """Versions awaiting the gate in teams where the viewer is a member (reviewers decide), of
    plugins the viewer may see: a requester does not learn the names of private plugins."""
    return (PluginVersion.objects.filter(visible_q(viewer, "plugin__"),
                                         status=PluginVersion.Status.PENDING,
                                         plugin__team_id__in=sorted(viewer.member_of))
            .select_related("plugin__team", "submitted_by").defer("files")
            .order_by("created_at"))


# -- the package index ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexFile:
    filename: str
    url_id: int
    sha256: str
    size: int
    version: str
    requires_python: str
    yanked: bool
    yank_reason: str
    uploaded_at: object


def index_projects(viewer: Viewer) -> list[tuple[str, str]]:
    """(display name, normalized name) of every project the viewer may install."""
    return list(plugins_visible(viewer).order_by("normalized_name")
                .values_list("name", "normalized_name"))


def index_project(viewer: Viewer, normalized_name: str) -> Plugin | None:
    return (plugins_visible(viewer).filter(normalized_name=normalized_name)
            .only("id", "name", "normalized_name").first())


def index_files(plugin: Plugin) -> list[IndexFile]:
    rows = (Artifact.objects.filter(version__plugin_id=plugin.id,
                                    version__status=PluginVersion.Status.PUBLISHED)
            .values_list("id", "filename", "sha256", "size", "version__version",
                         "version__requires_python", "version__yanked",
                         "version__yank_reason", "version__published_at"))
    files = [IndexFile(url_id=r[0], filename=r[1], sha256=r[2], size=r[3], version=r[4],
                       requires_python=r[5], yanked=r[6], yank_reason=r[7], uploaded_at=r[8])
             for r in rows]
    return sorted(files, key=lambda f: (Version(f.version), f.filename))


def artifact_for_viewer(viewer: Viewer, artifact_id: int, filename: str) -> Artifact | None:
    artifact = (Artifact.objects.select_related("version__plugin")
                .filter(id=artifact_id, filename=filename,
                        version__status=PluginVersion.Status.PUBLISHED).first())
    if artifact is None or not can_see(viewer, artifact.version.plugin):
        return None
    return artifact


# -- API tokens ----------------------------------------------------------------------------------


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", errors="replace")).hexdigest()


def api_token_user(raw: str) -> AbstractBaseUser | None:
    """The active user owning token `raw`, or None; last_used_at is refreshed at most once a
    minute so that pip's many requests do not each cost a write."""
    token = (ApiToken.objects.select_related("user")
             .filter(token_hash=token_hash(raw), revoked_at__isnull=True).first())
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > TOKEN_TOUCH_INTERVAL:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def api_tokens_of(user_id: int) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user_id=user_id).order_by("revoked_at", "-created_at")


# -- the checks of an upload ---------------------------------------------------------------------

# After this long in the queue the page says the workers are busy (and that leaving is fine).
CHECK_BUSY_AFTER_S = 20


@dataclass(frozen=True)
class CheckProgress:
    """How far the checks of an upload are, in the words the version page uses."""

    headline: str
    steps: list[tuple[str, str]]  # (label, "done" | "current" | "todo")
    busy: bool


CHECK_HEADLINES = {
    "queued": "Checking your plugin: waiting for a worker…",
    "safety": "Checking your plugin: the safety gate is reading its code…",
    "tests": "Checking your plugin: running its tests in the sandbox…",
    "build": "Checking your plugin: building the wheel and the sdist…",
}


def check_progress(version: PluginVersion) -> CheckProgress:
    from django.utils import timezone

    order = ["safety", "tests", "build"]
    step = version.check_step or "queued"
    at = order.index(step) if step in order else -1
    steps = [(PluginVersion.CheckStep(name).label,
              "done" if i < at else "current" if i == at else "todo")
             for i, name in enumerate(order)]
    started = version.check_started_at or version.created_at
    waited = (timezone.now() - started).total_seconds() if started else 0
    return CheckProgress(headline=CHECK_HEADLINES.get(step, CHECK_HEADLINES["queued"]),
                         steps=steps, busy=step == "queued" and waited > CHECK_BUSY_AFTER_S)


def try_request_of(try_id: int, user_id: int | None) -> TryRequest | None:
    """A try, only for the user who asked for it."""
    if user_id is None:
        return None
    return TryRequest.objects.filter(pk=try_id, user_id=user_id).first()
