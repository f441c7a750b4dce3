"""The team board in a constant number of queries, whatever the number of projects.

One query fetches every card: the latest run's figures (one JSON object) and the human-needed
flags are correlated subqueries, the requester comes through a join (select_related's join, read
as values). Grouping into columns happens in Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, cast

from django.db.models import Case, Exists, F, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.functions import JSONObject
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString

from autocoder import realtime
from autocoder.compiled_queries import fetch_rows
from autocoder.llm.pricing import NO_PRICE
from autocoder.money import money
from autocoder.shared_copies import SharedCopies
from runs.approval_rules import awaiting_member_q
from runs.models import ApprovalRequest, ApprovalVote, Iteration, Project, Run
from teams.models import Membership, Team

S = Project.Status
# Every card of a team's unfiltered board, as rows, kept between the team's live events; a
# change no event announced shows within this many seconds (a card's tokens mid-step, say).
TEAM_CARDS: SharedCopies[list[CardRow]] = SharedCopies(max_age_s=5.0)


@dataclass(frozen=True)
class ColumnSpec:
    key: str
    label: str
    statuses: tuple[str, ...]
    empty: str


@dataclass(slots=True)
class Card:
    """One project on the board, every field ready to print: the template only pastes strings
    (500 cards must render in well under 150 ms), and user text is escaped once, here."""

    key: SafeString
    name: SafeString
    requester: SafeString
    status: str
    queue_position: int
    status_changed_at: datetime
    link: SafeString
    approval_url: SafeString
    iteration_text: SafeString
    pass_text: SafeString
    tokens_text: SafeString
    cost_text: SafeString
    age_text: SafeString
    needs_human: bool
    needs_my_review: bool
    css: SafeString

    @property
    def pk(self) -> int:
        return int(self.key)


# The columns that need a person come first (seen without scrolling, also on a phone); the rest
# follow in the order a project moves through them.
COLUMNS: tuple[ColumnSpec, ...] = (
    ColumnSpec("awaiting_approval", "Awaiting approval", (S.AWAITING_APPROVAL,),
               "No project waits for a reviewer."),
    ColumnSpec("escalated_failed", "Escalated / Failed", (S.ESCALATED, S.FAILED),
               "No run is stuck or failed."),
    ColumnSpec("interviewing", "Interviewing", (S.INTERVIEWING,),
               "No interviews in progress. New requests start here."),
    ColumnSpec("queued", "Queued", (S.QUEUED,), "Nothing waiting: new runs start right away."),
    ColumnSpec("generating", "Generating", (S.GENERATING,), "No run is generating code now."),
    ColumnSpec("succeeded", "Succeeded", (S.SUCCEEDED,), "No finished plugins yet."),
    ColumnSpec("published", "Published", (S.PUBLISHED,), "Nothing published yet."),
)
COLUMN_KEYS = frozenset(column.key for column in COLUMNS)
# States in which the run waits for a person whatever the approvals say.
HUMAN_STATUSES = frozenset({S.AWAITING_APPROVAL, S.ESCALATED})


@dataclass(frozen=True)
class BoardFilters:
    mine: bool = False
    review: bool = False
    status: str = ""
    text: str = ""

    @property
    def active(self) -> bool:
        return self.mine or self.review or bool(self.status or self.text)


@dataclass
class Column:
    spec: ColumnSpec
    cards: list[Card] = field(default_factory=list)
    limit: int | None = None
    reorderable: bool = False
    html: str = ""  # the shown cards' markup (projects.board_render), filled in by the view

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def shown(self) -> list[Card]:
        return self.cards[:self.limit] if self.limit else self.cards

    @property
    def hidden(self) -> int:
        return len(self.cards) - len(self.shown)


@dataclass
class Board:
    team: Team
    columns: list[Column]
    filters: BoardFilters

    @property
    def total(self) -> int:
        return sum(len(column.cards) for column in self.columns)

    def column(self, key: str) -> Column:
        return next(column for column in self.columns if column.key == key)


def _latest_run() -> QuerySet[Run]:
    return Run.objects.filter(project=OuterRef("pk")).order_by("-created_at", "-id")


def _latest_run_json() -> Subquery:
    """The latest run's card figures as one JSON object: a single correlated subquery per
    project instead of one per figure (4x faster with 500 projects)."""
    pass_rate = (Iteration.objects.filter(run_id=OuterRef("id")).order_by("-number")
                 .values("pass_rate")[:1])
    figures = JSONObject(id="id", iteration="iteration", max_iterations="max_iterations",
                         tokens=F("tokens_prompt") + F("tokens_completion"),
                         cost="cost", unpriced="tokens_unpriced",
                         pass_rate=Subquery(pass_rate))
    return Subquery(_latest_run().annotate(figures=figures).values("figures")[:1])


class RunFigures(TypedDict):
    """The latest run's figures on a card, as _latest_run_json's JSON object gives them."""

    id: int
    iteration: int
    max_iterations: int
    tokens: int
    cost: float | str | None  # a JSON number
    unpriced: int | None
    pass_rate: float | None


class CardRow(TypedDict):
    """One card's row: the project's CARD_FIELDS."""

    id: int
    name: str
    status: str
    queue_position: int
    status_changed_at: datetime
    requester__username: str
    run: RunFigures | None
    pending_approval_id: int | None
    interview_id: int | None


class CardAnnotations(TypedDict):
    run: RunFigures | None  # the latest run's figures (_latest_run_json)
    pending_approval_id: int | None
    interview_id: int | None


if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

    CardProject: TypeAlias = WithAnnotations[Project, CardAnnotations]


def board_projects(*, team: Team) -> QuerySet[CardProject]:
    """Every project of the team with its card figures annotated (one query, the same for
    every viewer; what is the viewer's own is `my_review_project_ids`)."""
    pending = ApprovalRequest.objects.filter(project=OuterRef("pk"),
                                             status=ApprovalRequest.Status.PENDING)
    return (
        Project.objects.filter(team=team).select_related("requester")
        .annotate(
            run=_latest_run_json(),
            pending_approval_id=Subquery(pending.order_by("created_at").values("id")[:1]),
            interview_id=F("interview__id"),
        )
    )


def my_review_project_ids(*, team: Team, membership: Membership) -> set[int]:
    """The team's projects with a pending gate that `membership` may decide and has not voted
    on (the "your review" badge). A query of its own: nested inside the card query as an
    annotation, Django's alias relabelling of the nested subqueries cost more than the rest of
    the board together."""
    allowed = awaiting_member_q(membership=membership, team=team)
    if allowed is None:
        return set()

    def pending_for_me() -> QuerySet[ApprovalRequest, tuple[int]]:
        voted = ApprovalVote.objects.filter(request=OuterRef("pk"), user_id=membership.user_id)
        return (ApprovalRequest.objects
                .filter(allowed, project__team=team, status=ApprovalRequest.Status.PENDING)
                .exclude(Exists(voted)).values_list("project_id"))

    # Built from exactly these: the rules read the member's role and the team's setting.
    key = ("my-review", team.pk, membership.user_id, membership.role, team.requester_may_approve)
    return {project_id for (project_id,) in fetch_rows(key, pending_for_me)}


CARD_FIELDS = ("id", "name", "status", "queue_position", "status_changed_at",
               "requester__username", "run", "pending_approval_id", "interview_id")


def _apply(projects: QuerySet[CardProject], filters: BoardFilters, user_id: int,
           my_review: set[int]) -> QuerySet[CardProject]:
    if filters.mine:
        projects = projects.filter(requester_id=user_id)
    if filters.review:
        projects = projects.filter(pk__in=my_review)
    if filters.status in COLUMN_KEYS:
        statuses = next(c.statuses for c in COLUMNS if c.key == filters.status)
        projects = projects.filter(status__in=statuses)
    if filters.text:
        projects = projects.filter(Q(name__icontains=filters.text)
                                   | Q(requester__username__icontains=filters.text))
    return projects


def board_for(*, team: Team, membership: Membership, filters: BoardFilters,
              limit: int | None = None, now: datetime | None = None) -> Board:
    """The board's columns: queued cards in queue order, the others most recent move first;
    a column shows at most `limit` cards (None: all)."""
    my_review = my_review_project_ids(team=team, membership=membership)
    now = now or timezone.now()
    columns = {spec.key: Column(spec, limit=limit,
                                reorderable=spec.key == "queued" and membership.can_review)
               for spec in COLUMNS if not filters.status or spec.key == filters.status}
    by_status = {status: spec.key for spec in COLUMNS for status in spec.statuses}
    urls = _UrlPatterns()
    for row in card_rows(team=team, filters=filters, user_id=membership.user_id,
                         my_review=my_review):
        key = by_status.get(row["status"])
        if key in columns:
            columns[key].cards.append(_card(row, now, urls, row["id"] in my_review))
    if "queued" in columns:
        columns["queued"].cards.sort(key=queue_key)
    return Board(team=team, columns=list(columns.values()), filters=filters)


def card_rows(*, team: Team, filters: BoardFilters, user_id: int,
              my_review: set[int]) -> list[CardRow]:
    """The card figures of the team's projects that pass `filters`, most recent move first.

    Rows, not model instances: the requester comes through the join, no object is built. The
    unfiltered board, what nearly every look at it asks for, is compiled once per team and its
    rows are shared by the team's viewers until the team's next live event (TEAM_CARDS)."""
    def ordered() -> QuerySet[CardProject]:
        projects = _apply(board_projects(team=team), filters, user_id, my_review)
        return projects.order_by("-status_changed_at", "-id")

    def every_card() -> list[CardRow]:
        rows = fetch_rows(("board-cards", team.pk), lambda: ordered().values_list(*CARD_FIELDS))
        return [_card_row(dict(zip(CARD_FIELDS, row, strict=True))) for row in rows]

    if filters.active:
        return [_card_row(row) for row in ordered().values(*CARD_FIELDS)]
    return TEAM_CARDS.get(team.pk, group=realtime.team_group(team.pk), build=every_card)


def queue_key(card: Card) -> tuple[bool, int, datetime, int]:
    """The order of the queue column (the same as queue_order() in SQL)."""
    return (card.queue_position == 0, card.queue_position, card.status_changed_at, card.pk)


def queue_order() -> tuple[Case | str, ...]:
    """Numbered places first; a project queued without a place yet joins at the end, in arrival
    order (0 means "no place": see Project.queue_position)."""
    unplaced = Case(When(queue_position=0, then=Value(1)), default=Value(0))
    return (unplaced, "queue_position", "status_changed_at", "id")


def queued_projects(team: Team) -> QuerySet[Project]:
    return Project.objects.filter(team=team, status=S.QUEUED).order_by(*queue_order())


class _UrlPatterns:
    """URLs of cards without one reverse() per card (500 of them cost more than the query)."""

    def __init__(self) -> None:
        self.run = reverse("run_detail", args=[0]).replace("/0/", "/{}/")
        self.approval = reverse("approval_detail", args=[0]).replace("/0/", "/{}/")
        self.interview = reverse("interview_detail", args=[0]).replace("/0/", "/{}/")


def _card_row(values: dict[str, Any]) -> CardRow:
    """A row of CARD_FIELDS from the database, read as the card's row."""
    return cast(CardRow, values)


def _card(row: CardRow, now: datetime, urls: _UrlPatterns, needs_my_review: bool) -> Card:
    run = row["run"]
    pending = row["pending_approval_id"]
    needs_human = pending is not None or row["status"] in HUMAN_STATUSES
    pass_rate = run["pass_rate"] if run else None
    return Card(
        key=SafeString(row["id"]), name=escape(row["name"]),
        requester=escape(row["requester__username"]), status=row["status"],
        queue_position=row["queue_position"], status_changed_at=row["status_changed_at"],
        link=SafeString(urls.run.format(run["id"]) if run else
                           urls.interview.format(row["interview_id"]) if row["interview_id"]
                           else ""),
        approval_url=SafeString(urls.approval.format(pending) if pending else ""),
        iteration_text=SafeString(f"{run['iteration']}/{run['max_iterations']}" if run
                                  else "–"),
        pass_text=SafeString(f"{pass_rate:.0%}" if pass_rate is not None else "–"),
        tokens_text=SafeString(f"{run['tokens']:,}" if run else "–"),
        cost_text=escape(_cost_text(run)) if run and run["tokens"] else SafeString("–"),
        age_text=SafeString(age_text(now - row["status_changed_at"])),
        needs_human=needs_human, needs_my_review=needs_my_review,
        css=SafeString("board-card needs-human" if needs_human else "board-card"),
    )


def _cost_text(run: RunFigures) -> str:
    """The latest run's cost, from the card's JSON (the cost arrives as a JSON number)."""
    unpriced = run.get("unpriced") or 0
    if unpriced >= run["tokens"]:
        return NO_PRICE
    text = money(Decimal(str(run.get("cost") or 0)))
    return f"{text}, part: {NO_PRICE}" if unpriced else text


def age_text(age: timedelta) -> str:
    """How long a card has been in its column, short: 40 s, 42 min, 5 h, 3 d."""
    seconds = max(int(age.total_seconds()), 0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"
