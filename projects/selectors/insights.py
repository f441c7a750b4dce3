"""How generation is going for a team: the figures of the team page "How generation is going"
and of `manage.py team_report`, computed from stored runs in a fixed number of SQL queries
(five, however many runs there are). Definitions, in words, are in docs/portal.md,
"How generation is going".

Runs are counted by the week they were started (a cohort): a run started this week that
succeeds next week counts as a success of this week. Weeks start on Monday (UTC).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import (
    Aggregate,
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import TruncWeek
from django.utils import timezone

from autocoder.lessons.models import LessonOutcome
from autocoder.llm.pricing import cost_text
from autocoder.llm.types import CAPPED
from autocoder.money import currency
from runs.models import ApprovalRequest, Iteration, LLMCall, LoopEvent, Run
from teams.models import Team

# The seed's targets, shown beside the figures.
TARGET_BUILD_SUCCESS = 0.95
TARGET_AUTO_FIX = 0.80
# A period longer than this is cut (a page of 104 weekly bars is already hard to read).
MAX_WEEKS = 104

# Runs that ended on their own: a cancelled run (a person stopped it) is left out of both.
FINISHED = Run.TERMINAL - {Run.Status.CANCELLED}
FAILED = Run.UNSUCCESSFUL - {Run.Status.CANCELLED}


class Median(Aggregate):
    """PostgreSQL's continuous median of the expression (NULLs ignored)."""

    function = "PERCENTILE_CONT"
    name = "Median"
    template = "%(function)s(0.5) WITHIN GROUP (ORDER BY %(expressions)s)"
    allow_distinct = False


# The hook (autocoder/hooks.py) through which apps above add a section to the page: a callable
# (team=, period=) -> InsightSection | None.
INSIGHT_SECTION = "insight_section"


@dataclass(frozen=True)
class InsightSection:
    template: str  # included with `data`
    data: Any


@dataclass(frozen=True)
class Period:
    """Whole weeks from the Monday on or before `since` to the Sunday on or after `until`."""

    since: date
    until: date

    @classmethod
    def last_weeks(cls, weeks: int, today: date | None = None) -> Period:
        end = today or timezone.localdate()
        return cls.of(end - timedelta(weeks=max(1, weeks)) + timedelta(days=1), end)

    @classmethod
    def of(cls, since: date, until: date) -> Period:
        since, until = min(since, until), max(since, until)
        monday = since - timedelta(days=since.weekday())
        sunday = until + timedelta(days=6 - until.weekday())
        monday = max(monday, sunday - timedelta(weeks=MAX_WEEKS) + timedelta(days=1))
        return cls(monday, sunday)

    @property
    def weeks(self) -> list[date]:
        return [self.since + timedelta(weeks=n)
                for n in range(((self.until - self.since).days + 1) // 7)]

    def bounds(self) -> tuple[datetime, datetime]:
        start = timezone.make_aware(datetime.combine(self.since, time.min))
        return start, start + timedelta(days=(self.until - self.since).days + 1)


@dataclass(frozen=True)
class Figures:
    """What one week (or the whole period) adds up to."""

    started: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    escalated: int = 0
    # Finished runs (succeeded, failed or aborted) that failed at least one attempt.
    stumbled: int = 0
    auto_fixed: int = 0
    tokens: int = 0
    # Money in the site's currency (each call priced when made) and the tokens of models
    # without a price, which no cost includes.
    cost: Decimal = Decimal(0)
    tokens_unpriced: int = 0
    human_decisions: int = 0
    median_attempts: float | None = None
    median_wall: timedelta | None = None
    lessons_retrieved: int = 0
    lessons_helped: int = 0

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed

    @property
    def build_success_rate(self) -> float | None:
        return _ratio(self.succeeded, self.finished)

    @property
    def auto_fix_rate(self) -> float | None:
        return _ratio(self.auto_fixed, self.stumbled)

    @property
    def decisions_per_run(self) -> float | None:
        return _ratio(self.human_decisions, self.started)

    @property
    def tokens_per_success(self) -> float | None:
        return _ratio(self.tokens, self.succeeded)

    @property
    def cost_per_success(self) -> Decimal | None:
        return self.cost / self.succeeded if self.succeeded else None

    @property
    def cost_per_success_text(self) -> str:
        """The cost per plugin that succeeded as a page says it ("no price set" for tokens of
        models without a price)."""
        if not self.succeeded:
            return "–"
        return cost_text(self.cost_per_success, unpriced_tokens=self.tokens_unpriced,
                         tokens=self.tokens)

    @property
    def lessons_help_rate(self) -> float | None:
        return _ratio(self.lessons_helped, self.lessons_retrieved)


@dataclass(frozen=True)
class Insights:
    team: Team
    period: Period
    weeks: list[tuple[date, Figures]]
    total: Figures
    loop_events: list[tuple[str, int]] = field(default_factory=list)
    # Per model: (model, replies, replies that stopped at their length limit).
    models: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.total.started == 0

    def as_dict(self) -> dict[str, object]:
        """The figures as JSON-friendly data (team_report --json)."""
        return {"team": self.team.slug, "since": self.period.since.isoformat(),
                "until": self.period.until.isoformat(),
                "targets": {"build_success_rate": TARGET_BUILD_SUCCESS,
                            "auto_fix_rate": TARGET_AUTO_FIX},
                "total": _figures_dict(self.total),
                "loop_events": dict(self.loop_events),
                "models": [{"model": model, "replies": replies, "cut_at_limit": cut}
                           for model, replies, cut in self.models],
                "weeks": [{"week": week.isoformat(), **_figures_dict(figures)}
                          for week, figures in self.weeks]}


def team_insights(*, team: Team, period: Period) -> Insights:
    """The team's figures per week and over `period` (six queries)."""
    runs = _runs_in(team, period)
    weekly = _weekly_runs(runs)
    decisions = _weekly_decisions(runs)
    lessons = _weekly_lessons(runs)
    weeks = [(week, _week_figures(weekly.get(week, {}), decisions.get(week, 0),
                                  lessons.get(week, (0, 0))))
             for week in period.weeks]
    total = _period_figures(runs, weeks)
    return Insights(team=team, period=period, weeks=weeks, total=total,
                    loop_events=_loop_events(runs), models=_models(runs))


def _runs_in(team: Team, period: Period) -> QuerySet[Run]:
    start, end = period.bounds()
    return Run.objects.filter(project__team=team, created_at__gte=start, created_at__lt=end)


def _outcome_counts() -> dict[str, object]:
    """The per-run facts every figure is counted from, as aggregates."""
    stumbled = Q(failed_attempt=True, status__in=FINISHED)
    helped_by_person = Q(escalations_answered__gt=0) | Q(changes_requested=True)
    return {
        "started": Count("id"),
        "succeeded": Count("id", filter=Q(status=Run.Status.SUCCEEDED)),
        "failed": Count("id", filter=Q(status__in=FAILED)),
        "cancelled": Count("id", filter=Q(status=Run.Status.CANCELLED)),
        "escalated": Count("id", filter=Q(was_escalated=True)),
        "stumbled": Count("id", filter=stumbled),
        "auto_fixed": Count("id", filter=stumbled & Q(status=Run.Status.SUCCEEDED)
                            & ~helped_by_person),
        "tokens": Sum(F("tokens_prompt") + F("tokens_completion")),
        "cost": Sum("cost"),
        "tokens_unpriced": Sum("tokens_unpriced"),
        "median_attempts": Median("iteration", filter=Q(status=Run.Status.SUCCEEDED),
                                  output_field=FloatField()),
        "median_wall": Median(ExpressionWrapper(F("finished_at") - F("started_at"),
                                                output_field=DurationField()),
                              filter=Q(status=Run.Status.SUCCEEDED),
                              output_field=DurationField()),
    }


def _with_facts(runs: QuerySet[Run]) -> QuerySet[Run]:
    requests = ApprovalRequest.objects.filter(run=OuterRef("pk"))
    return runs.annotate(
        failed_attempt=Exists(Iteration.objects.filter(run=OuterRef("pk"), succeeded=False)),
        was_escalated=Exists(requests.filter(kind=ApprovalRequest.Kind.ESCALATION)),
        changes_requested=Exists(
            requests.filter(status=ApprovalRequest.Status.CHANGES_REQUESTED)),
    )


def _weekly_runs(runs: QuerySet[Run]) -> dict[date, dict[str, Any]]:
    rows = (_with_facts(runs).annotate(week=TruncWeek("created_at")).values("week")
            .annotate(**_outcome_counts()).order_by("week"))
    return {_day(row["week"]): dict(row) for row in rows}


def _period_figures(runs: QuerySet[Run], weeks: list[tuple[date, Figures]]) -> Figures:
    """The period's totals: sums of the weeks, and medians over all its successful runs."""
    counts = _outcome_counts()
    medians = runs.aggregate(median_attempts=counts["median_attempts"],
                             median_wall=counts["median_wall"])
    summed = {name: sum(getattr(figures, name) for _, figures in weeks)
              for name in ("started", "succeeded", "failed", "cancelled", "escalated",
                           "stumbled", "auto_fixed", "tokens", "tokens_unpriced",
                           "human_decisions",
                           "lessons_retrieved", "lessons_helped")}
    return Figures(**summed, cost=sum((figures.cost for _, figures in weeks), Decimal(0)),
                   median_attempts=medians["median_attempts"],
                   median_wall=medians["median_wall"])


def _weekly_decisions(runs: QuerySet[Run]) -> dict[date, int]:
    """Decisions people made at the runs' gates, by the week the run started."""
    decided = (ApprovalRequest.objects.filter(run__in=runs, decided_by__isnull=False)
               .annotate(week=TruncWeek("run__created_at")).values("week")
               .annotate(n=Count("id")).order_by("week"))
    return {_day(row["week"]): row["n"] for row in decided}


def _weekly_lessons(runs: QuerySet[Run]) -> dict[date, tuple[int, int]]:
    """(lessons retrieved, lessons that helped) by the week the run that used them started."""
    run_week = runs.filter(pk=OuterRef("run_id")).annotate(
        week=TruncWeek("created_at")).values("week")[:1]
    rows = (LessonOutcome.objects.filter(run_id__in=runs.values("pk"))
            .annotate(week=Subquery(run_week)).values("week")
            .annotate(retrieved=Count("id"), helped=Count("id", filter=Q(helped=True)))
            .order_by("week"))
    return {_day(row["week"]): (row["retrieved"], row["helped"]) for row in rows}


def _loop_events(runs: QuerySet[Run]) -> list[tuple[str, int]]:
    # The reviewing model's exchange is recorded as loop events too; it is no loop pattern.
    rows = (LoopEvent.objects.filter(run__in=runs).exclude(type="reviewer").values("type")
            .annotate(n=Count("id")).order_by("-n", "type"))
    return [(row["type"], row["n"]) for row in rows]


def _models(runs: QuerySet[Run]) -> list[tuple[str, int, int]]:
    """How each model's replies ended: all of them, and those cut at their length limit
    (docs/llm.md, "Reply caps"); failed calls have no reply and are not counted."""
    rows = (LLMCall.objects.filter(run__in=runs, error="").values("model")
            .annotate(replies=Count("id"), cut=Count("id", filter=Q(finish_reason=CAPPED)))
            .order_by("-replies", "model"))
    return [(row["model"] or "unknown", row["replies"], row["cut"]) for row in rows]


def _week_figures(row: dict[str, Any], decisions: int, lessons: tuple[int, int]) -> Figures:
    counted = {name: int(row.get(name) or 0) for name in
               ("started", "succeeded", "failed", "cancelled", "escalated", "stumbled",
                "auto_fixed", "tokens", "tokens_unpriced")}
    return Figures(**counted, cost=row.get("cost") or Decimal(0), human_decisions=decisions,
                   median_attempts=row.get("median_attempts"),
                   median_wall=row.get("median_wall"),
                   lessons_retrieved=lessons[0], lessons_helped=lessons[1])


def _figures_dict(figures: Figures) -> dict[str, object]:
    wall = figures.median_wall
    return {
        "runs_started": figures.started, "succeeded": figures.succeeded,
        "failed": figures.failed, "cancelled": figures.cancelled,
        "escalated": figures.escalated, "build_success_rate": figures.build_success_rate,
        "auto_fix_rate": figures.auto_fix_rate, "median_attempts_to_success":
        figures.median_attempts,
        "median_wall_s_to_success": None if wall is None else round(wall.total_seconds(), 1),
        "human_decisions_per_run": figures.decisions_per_run,
        "lessons_retrieved": figures.lessons_retrieved,
        "lessons_helped": figures.lessons_helped, "tokens": figures.tokens,
        "tokens_per_succeeded_plugin": figures.tokens_per_success,
        "cost": str(figures.cost), "currency": currency(),
        "tokens_without_price": figures.tokens_unpriced,
        "cost_per_succeeded_plugin": None if figures.cost_per_success is None
        else str(round(figures.cost_per_success, 6)),
    }


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _day(moment: datetime | date) -> date:
    return moment.date() if isinstance(moment, datetime) else moment
