"""Reads for the run view: the timeline, one iteration in full, code, diffs and findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypedDict

from django.db.models import QuerySet
from django.utils import timezone

from projects.models import ApprovalRequest, Iteration, LoopEvent, Run

# The columns the timeline needs; code and reports stay in the database until asked for.
TIMELINE_FIELDS = ("id", "run_id", "number", "pass_rate", "acceptance_passed", "tests_ran",
                   "succeeded", "safety_verdict", "tokens", "timings", "diff_stats",
                   "error_signature", "created_at")
PHASES: list[Run.Phase] = [phase for phase in Run.Phase if phase != Run.Phase.DONE]


@dataclass
class TimelineEntry:
    """An iteration with the loop events and approval requests that happened after it."""

    iteration: Iteration | None
    number: int
    events: list[LoopEvent] = field(default_factory=list)
    approvals: list[ApprovalRequest] = field(default_factory=list)


@dataclass
class RunOverview:
    run: Run
    timeline: list[TimelineEntry]
    pending_approval: ApprovalRequest | None
    elapsed: timedelta | None
    phases: list[tuple[str, str, str]]  # (value, label, state: done|current|todo)

    @property
    def elapsed_text(self) -> str:
        return duration_text(self.elapsed.total_seconds()) if self.elapsed else "not started"

    @property
    def waited_text(self) -> str:
        return duration_text(self.run.waited_s)

    @property
    def latest(self) -> Iteration | None:
        entries = [e.iteration for e in self.timeline if e.iteration is not None]
        return entries[-1] if entries else None


def run_iterations(run: Run) -> QuerySet[Iteration]:
    return run.iterations.only(*TIMELINE_FIELDS).order_by("number")


def run_overview(run: Run) -> RunOverview:
    iterations = list(run_iterations(run))
    events = list(run.loop_events.order_by("id"))
    approvals = list(run.approvals.select_related("decided_by").order_by("created_at"))
    entries = {0: TimelineEntry(iteration=None, number=0)}
    entries.update({it.number: TimelineEntry(iteration=it, number=it.number) for it in iterations})
    for event in events:
        _entry(entries, event.iteration).events.append(event)
    for approval in approvals:
        # A plan request names the iteration it plans; it happens before that iteration.
        number = approval.iteration - 1 if approval.kind == ApprovalRequest.Kind.PLAN \
            else approval.iteration
        _entry(entries, number).approvals.append(approval)
    pending = next((a for a in reversed(approvals)
                    if a.status == ApprovalRequest.Status.PENDING), None)
    return RunOverview(run=run, timeline=[entries[k] for k in sorted(entries)],
                       pending_approval=pending, elapsed=_elapsed(run),
                       phases=_phases(run))


def _entry(entries: dict[int, TimelineEntry], number: int) -> TimelineEntry:
    number = max(number, 0)
    return entries.setdefault(number, TimelineEntry(iteration=None, number=number))


def _elapsed(run: Run) -> timedelta | None:
    if run.started_at is None:
        return None
    return (run.finished_at or timezone.now()) - run.started_at


def _phases(run: Run) -> list[tuple[str, str, str]]:
    if run.is_terminal or run.phase == Run.Phase.DONE:
        return [(p.value, p.label, "done") for p in PHASES]
    current = PHASES.index(Run.Phase(run.phase)) if run.phase in Run.Phase.values else -1
    return [(p.value, p.label, "done" if i < current else "current" if i == current else "todo")
            for i, p in enumerate(PHASES)]


def run_iteration(run: Run, number: int | None) -> Iteration | None:
    """One iteration in full (files, reports), the latest when `number` is None."""
    iterations = run.iterations.order_by("-number")
    if number is not None:
        iterations = iterations.filter(number=number)
    return iterations.first()


def findings_by_line(safety_report: dict[str, Any], path: str) -> dict[int, list[str]]:
    """Safety findings of one file, keyed by line number, as readable sentences."""
    lines: dict[int, list[str]] = {}
    for finding in safety_report.get("findings") or []:
        if finding.get("file") != path or not finding.get("line"):
            continue
        text = f"{finding.get('severity', '')} {finding.get('rule', '')}: " \
               f"{finding.get('message', '')}".strip()
        lines.setdefault(int(finding["line"]), []).append(text)
    return lines


class LessonTitle(TypedDict):
    id: int
    title: str
    kind: str


def lessons_titles(ids: list[int]) -> list[LessonTitle]:
    """Titles of the lessons an iteration's prompts used (those still stored)."""
    if not ids:
        return []
    from autocoder.lessons.models import Lesson

    found = {row["id"]: row for row in Lesson.objects.filter(pk__in=ids)
             .values("id", "title", "kind")}
    return [found[pk] for pk in ids if pk in found]


def duration_text(seconds: float) -> str:
    """3 h 2 min, 4 min 5 s, 12 s."""
    total = int(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"
