"""Reads for the run view: the timeline, one iteration in full, code, diffs and findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypedDict

from django.db.models import QuerySet
from django.utils import timezone

from autocoder.engine.states import Phase
from autocoder.llm.types import CAPPED
from autocoder.safety import finding_applies
from runs.models import ApprovalRequest, Iteration, LLMCall, LoopEvent, Project, Run
from runs.summary import (
    AttemptFacts,
    FindingFact,
    LoopFact,
    OutcomeFact,
    RunFacts,
    RunSummary,
    attempt_outcome,
    finding_text,
    loop_sentence,
    summarize,
)

# The columns the timeline needs; code and reports stay in the database until asked for.
TIMELINE_FIELDS = ("id", "run_id", "number", "pass_rate", "quality_score", "acceptance_passed",
                   "tests_ran", "succeeded", "safety_verdict", "tokens", "timings", "diff_stats",
                   "error_signature", "code_hash", "reply_hash", "created_at")
PHASES: list[Phase] = [phase for phase in Phase if phase != Phase.DONE]
# After which step a run waiting on a request stopped: the step that asked.
_ASKED_AFTER = {ApprovalRequest.Kind.PLAN: Run.Phase.PLAN,
                ApprovalRequest.Kind.CHANGE: Run.Phase.VERIFY,
                ApprovalRequest.Kind.ESCALATION: Run.Phase.REFLECT}


@dataclass
class TimelineEntry:
    """An iteration with the loop events and approval requests that happened after it."""

    iteration: Iteration | None
    number: int
    events: list[LoopEvent] = field(default_factory=list)
    approvals: list[ApprovalRequest] = field(default_factory=list)

    @property
    def outcome(self) -> str:
        """The attempt's result in plain words (the timeline's line)."""
        return attempt_outcome(attempt_facts(self.iteration)) if self.iteration else ""

    @property
    def told_events(self) -> list[tuple[str, LoopEvent]]:
        """Each loop event with its plain sentence."""
        return [(loop_sentence(loop_fact(event)), event) for event in self.events]


@dataclass
class RunOverview:
    run: Run
    timeline: list[TimelineEntry]
    pending_approval: ApprovalRequest | None
    elapsed: timedelta | None
    phases: list[tuple[str, str, str]]  # (value, label, state: done|current|stopped|todo)
    summary: RunSummary

    @property
    def elapsed_text(self) -> str:
        return duration_text(self.elapsed.total_seconds()) if self.elapsed else "not started"

    @property
    def waited_text(self) -> str:
        return duration_text(self.run.waited_s)

    @property
    def loop_events(self) -> list[LoopEvent]:
        return [event for entry in self.timeline for event in entry.events]

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
    waiting_for = pending.kind if pending is not None else ""
    latest = iterations[-1] if iterations else None
    facts = run_facts(run, latest=_with_reports(latest), events=events, approvals=approvals,
                      waiting_for=waiting_for)
    return RunOverview(run=run, timeline=[entries[k] for k in sorted(entries)],
                       pending_approval=pending, elapsed=_elapsed(run),
                       phases=_phases(run, waiting_for), summary=summarize(facts))


def _with_reports(latest: Iteration | None) -> Iteration | None:
    """The latest iteration with its test and safety reports (the timeline leaves them out)."""
    if latest is None:
        return None
    row = Iteration.objects.filter(pk=latest.pk).values_list("test_report",
                                                             "safety_report").first()
    test_report, safety_report = row if row is not None else ({}, {})
    latest.test_report, latest.safety_report = test_report or {}, safety_report or {}
    return latest


def run_facts(run: Run, *, latest: Iteration | None, events: list[LoopEvent],
              approvals: list[ApprovalRequest], waiting_for: str = "") -> RunFacts:
    """What the summary is written from (runs/summary.py)."""
    rejected = next((a.kind for a in reversed(approvals)
                     if a.status == ApprovalRequest.Status.REJECTED
                     and a.kind in (ApprovalRequest.Kind.CHANGE,
                                    ApprovalRequest.Kind.ESCALATION,
                                    ApprovalRequest.Kind.BUDGET)), "")
    return RunFacts(
        status=run.status, phase=run.phase, completed=run.iteration,
        max_attempts=run.max_iterations,
        latest=attempt_facts(latest, reports=True) if latest is not None else None,
        events=tuple(loop_fact(e) for e in events), waiting_for=waiting_for,
        pause_requested=run.pause_requested, commands=spec_commands(run), rejected=rejected,
        tokens_used=run.tokens_total, max_tokens=run.max_tokens, over_time=_over_time(run),
        published=run.project.status == Project.Status.PUBLISHED, held_by=run.held_by,
    )


def spec_commands(run: Run) -> tuple[str, ...]:
    """The names of the commands the run's spec asks for (its examples are named after them)."""
    commands = (run.project.spec or {}).get("commands") or []
    return tuple(str(c.get("name", "")) for c in commands if isinstance(c, dict))


def attempt_facts(iteration: Iteration, *, reports: bool = False) -> AttemptFacts:
    """An iteration's facts; its reports only when asked (they may not have been loaded)."""
    test_report = (iteration.test_report or {}) if reports else {}
    safety_report = (iteration.safety_report or {}) if reports else {}
    return AttemptFacts(
        number=iteration.number, tests_ran=iteration.tests_ran, succeeded=iteration.succeeded,
        acceptance_passed=iteration.acceptance_passed, pass_rate=iteration.pass_rate,
        safety_verdict=iteration.safety_verdict,
        tests=tuple(OutcomeFact(str(o.get("nodeid", "")), str(o.get("outcome", "")),
                                str(o.get("message") or ""))
                    for o in test_report.get("outcomes") or []),
        findings=tuple(_finding_fact(f) for f in visible_findings(safety_report)),
        timed_out=bool(test_report.get("timed_out")), out_of_memory=bool(test_report.get("oom")),
    )


@dataclass(frozen=True)
class ReplyCut:
    """A reply of attempt N that stopped short (at its length limit, or with a block left
    open), and what came of it: completed `asked` times ("continue": shown what it wrote and
    asked to go on; "longer": asked again with more room), `whole` when it no longer stops
    short (docs/engine.md, "The reply protocol for files")."""

    role: str
    asked: int
    how: str
    whole: bool

    @property
    def sentence(self) -> str:
        what = (f"the {self.role}'s reply stopped at its length limit" if self.cut_at_cap
                else f"the {self.role}'s reply left a block open")
        if not self.asked:
            return f"{what}; it was not continued, so what it wrote is incomplete"
        times = "once" if self.asked == 1 else f"{self.asked} times"
        done = ("asked to continue" if self.how == "continue" else
                "asked again with more room")
        end = ("and is whole now" if self.whole else
               "and is still cut: its end is missing, and what it was used for says so")
        return f"{what}; it was {done} {times} {end}"

    cut_at_cap: bool = True


_COMPLETIONS = ("continue", "longer")


def reply_cuts(run: Run, number: int) -> list[ReplyCut]:
    """The replies of attempt `number` that stopped short, in order, with how each ended."""
    calls = LLMCall.objects.filter(run=run, iteration=number, error="").order_by("id")
    chains: list[list[tuple[str, str, str]]] = []
    for role, purpose, finish in calls.values_list("role", "purpose", "finish_reason"):
        if purpose in _COMPLETIONS and chains and chains[-1][0][0] == role:
            chains[-1].append((role, purpose, finish))
        else:
            chains.append([(role, purpose, finish)])
    cuts = []
    for chain in chains:
        if len(chain) == 1 and chain[0][2] != CAPPED:
            continue
        cuts.append(ReplyCut(role=chain[0][0], asked=len(chain) - 1,
                             how=chain[-1][1] or "continue", whole=chain[-1][2] != CAPPED,
                             cut_at_cap=chain[0][2] == CAPPED))
    return cuts


def loop_fact(event: LoopEvent) -> LoopFact:
    return LoopFact(attempt=event.iteration, kind=event.type, action=event.action,
                    occurrences=event.occurrences)


def _over_time(run: Run) -> bool:
    if run.started_at is None or not run.max_wall_s:
        return False
    worked = ((run.finished_at or timezone.now()) - run.started_at).total_seconds() - run.waited_s
    return worked > run.max_wall_s


def _entry(entries: dict[int, TimelineEntry], number: int) -> TimelineEntry:
    number = max(number, 0)
    return entries.setdefault(number, TimelineEntry(iteration=None, number=number))


def _elapsed(run: Run) -> timedelta | None:
    if run.started_at is None:
        return None
    return (run.finished_at or timezone.now()) - run.started_at


def _phases(run: Run, waiting_for: str = "") -> list[tuple[str, str, str]]:
    """The steps of the attempt in hand. Only a working run has a current step; a waiting run
    (paused, waiting for a person or for the installation) shows the step after which it
    stopped; a run that ended without success has no attempt in hand: none (the summary says
    why it stopped)."""
    if run.status == Run.Status.SUCCEEDED:
        return [(p.value, p.label, "done") for p in PHASES]
    if run.is_terminal:
        return []
    if run.phase not in Run.Phase.values or run.phase == Run.Phase.DONE:
        return [(p.value, p.label, "done") for p in PHASES]
    at = PHASES.index(Run.Phase(run.phase))
    if run.status not in Run.WAITING:
        return [(p.value, p.label, "done" if i < at else "current" if i == at else "todo")
                for i, p in enumerate(PHASES)]
    stopped = _stopped_after(run, at, waiting_for)
    return [(p.value, p.label, "done" if i < stopped else "stopped" if i == stopped else "todo")
            for i, p in enumerate(PHASES)]


def _stopped_after(run: Run, at: int, waiting_for: str) -> int:
    """The index of the last step a waiting run performed (-1: none yet)."""
    if waiting_for in _ASKED_AFTER:
        return PHASES.index(_ASKED_AFTER[ApprovalRequest.Kind(waiting_for)])
    if at > 0:
        return at - 1
    # Planning the next attempt: the last step was the previous attempt's reflection.
    return PHASES.index(Run.Phase.REFLECT) if run.iteration > 0 else -1


def run_iteration(run: Run, number: int | None) -> Iteration | None:
    """One iteration in full (files, reports), the latest when `number` is None."""
    iterations = run.iterations.order_by("-number")
    if number is not None:
        iterations = iterations.filter(number=number)
    return iterations.first()


def visible_findings(safety_report: dict[str, Any]) -> list[dict[str, Any]]:
    """A stored report's findings that are findings under the gate's rules today (a report
    written earlier may hold an assert in a test file, which no longer is one)."""
    return [f for f in safety_report.get("findings") or []
            if finding_applies(str(f.get("tool", "")), str(f.get("rule", "")),
                               str(f.get("file", "")))]


def told_findings(safety_report: dict[str, Any]) -> list[dict[str, Any]]:
    """The visible findings, each with its words without the tool's codes ("plain")."""
    return [{**f, "plain": finding_text(_finding_fact(f))} for f in visible_findings(safety_report)]


def _finding_fact(finding: dict[str, Any]) -> FindingFact:
    return FindingFact(str(finding.get("file", "")), int(finding.get("line") or 1),
                       str(finding.get("severity", "")), str(finding.get("message", "")),
                       str(finding.get("tool", "")))


def findings_by_line(safety_report: dict[str, Any], path: str) -> dict[int, list[str]]:
    """Safety findings of one file, keyed by line number, as readable sentences."""
    lines: dict[int, list[str]] = {}
    for finding in visible_findings(safety_report):
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
