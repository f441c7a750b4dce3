"""The team board in a constant number of queries, whatever the number of projects.

One query fetches every card: the latest run's figures and the human-needed flags are correlated
subqueries, the requester comes through a join. Grouping into columns happens in Python.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Case, Exists, F, OuterRef, Q, QuerySet, Subquery, Value, When
from django.utils import timezone

from projects.models import ApprovalRequest, ApprovalVote, Iteration, Membership, Project, Run, Team
from projects.selectors.approvals import decidable_projects_q

S = Project.Status


@dataclass(frozen=True)
class ColumnSpec:
    key: str
    label: str
    statuses: tuple[str, ...]
    empty: str


COLUMNS: tuple[ColumnSpec, ...] = (
    ColumnSpec("interviewing", "Interviewing", (S.INTERVIEWING,),
               "No interviews in progress. New requests start here."),
    ColumnSpec("queued", "Queued", (S.QUEUED,), "Nothing waiting: new runs start right away."),
    ColumnSpec("generating", "Generating", (S.GENERATING,), "No run is generating code now."),
    ColumnSpec("awaiting_approval", "Awaiting approval", (S.AWAITING_APPROVAL,),
               "No project waits for a reviewer."),
    ColumnSpec("succeeded", "Succeeded", (S.SUCCEEDED,), "No finished plugins yet."),
    ColumnSpec("published", "Published", (S.PUBLISHED,), "Nothing published yet."),
    ColumnSpec("escalated_failed", "Escalated / Failed", (S.ESCALATED, S.FAILED),
               "No run is stuck or failed."),
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
    cards: list[Project] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.spec.key


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


def _pending(user: AbstractBaseUser) -> tuple[Exists, Exists]:
    pending = ApprovalRequest.objects.filter(project=OuterRef("pk"),
                                             status=ApprovalRequest.Status.PENDING)
    mine_voted = ApprovalVote.objects.filter(request=OuterRef("pk"), user=user)
    return Exists(pending), Exists(pending.exclude(Exists(mine_voted)))


def board_projects(*, team: Team, membership: Membership) -> QuerySet[Project]:
    """Every project of the team with its card figures annotated (one query)."""
    latest = _latest_run()
    any_pending, unvoted_pending = _pending(membership.user)
    decidable = decidable_projects_q(membership=membership, team=team)
    my_review = unvoted_pending & (Q(decidable) if decidable is not None else Q(pk__in=[]))
    return (
        Project.objects.filter(team=team).select_related("requester")
        .annotate(
            run_id=Subquery(latest.values("id")[:1]),
            run_status=Subquery(latest.values("status")[:1]),
            run_iteration=Subquery(latest.values("iteration")[:1]),
            run_max_iterations=Subquery(latest.values("max_iterations")[:1]),
            run_tokens=Subquery(latest.annotate(total=F("tokens_prompt") + F("tokens_completion"))
                                .values("total")[:1]),
            pass_rate=Subquery(Iteration.objects.filter(run_id=OuterRef("run_id"))
                               .order_by("-number").values("pass_rate")[:1]),
            pending_approval_id=Subquery(
                ApprovalRequest.objects.filter(project=OuterRef("pk"),
                                               status=ApprovalRequest.Status.PENDING)
                .order_by("created_at").values("id")[:1]),
            has_pending=any_pending,
            needs_my_review=my_review,
        )
        .defer("spec")
    )


def _apply(projects: QuerySet[Project], filters: BoardFilters,
           user: AbstractBaseUser) -> QuerySet[Project]:
    if filters.mine:
        projects = projects.filter(requester=user)
    if filters.review:
        projects = projects.filter(needs_my_review=True)
    if filters.status in COLUMN_KEYS:
        statuses = next(c.statuses for c in COLUMNS if c.key == filters.status)
        projects = projects.filter(status__in=statuses)
    if filters.text:
        projects = projects.filter(Q(name__icontains=filters.text)
                                   | Q(requester__username__icontains=filters.text))
    return projects


def board_for(*, team: Team, membership: Membership, filters: BoardFilters,
              now: datetime | None = None) -> Board:
    """The board's columns: queued cards in queue order, the others most recent move first."""
    projects = _apply(board_projects(team=team, membership=membership), filters, membership.user)
    projects = projects.order_by("-status_changed_at", "-id")
    now = now or timezone.now()
    columns = {spec.key: Column(spec) for spec in COLUMNS
               if not filters.status or spec.key == filters.status}
    by_status = {status: spec.key for spec in COLUMNS for status in spec.statuses}
    for project in projects:
        project.in_column_for = now - project.status_changed_at  # type: ignore[attr-defined]
        project.needs_human = project.has_pending or project.status in HUMAN_STATUSES  # type: ignore[attr-defined]
        key = by_status.get(project.status)
        if key in columns:
            columns[key].cards.append(project)
    if "queued" in columns:
        columns["queued"].cards.sort(key=queue_key)
    return Board(team=team, columns=list(columns.values()), filters=filters)


def queue_key(project: Project) -> tuple[bool, int, datetime, int]:
    """The order of the queue column (the same as queue_order() in SQL)."""
    return (project.queue_position == 0, project.queue_position, project.status_changed_at,
            project.pk)


def queue_order() -> tuple[Case | str, ...]:
    """Numbered places first; a project queued without a place yet joins at the end, in arrival
    order (0 means "no place": see Project.queue_position)."""
    unplaced = Case(When(queue_position=0, then=Value(1)), default=Value(0))
    return (unplaced, "queue_position", "status_changed_at", "id")


def queued_projects(team: Team) -> QuerySet[Project]:
    return Project.objects.filter(team=team, status=S.QUEUED).order_by(*queue_order())
