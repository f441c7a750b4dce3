"""What the pages and commands show of schedules: the next runs and what the next one will send,
the recent runs with their results, and the schedule a version's request asked for (the spec's
`schedule`, offered filled in once the version is activated)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from marketplace.models import PluginVersion
from tools.declared import command_names, declared_inputs
from tools.models import Invocation, Schedule
from tools.services.calendar import (
    RuleError,
    ScheduleRule,
    moment_words,
    next_runs,
    rule_words,
    schedule_rule_parse,
)
from tools.services.periods import Periods, payload_fill, period_words
from tools.services.schedules import ScheduleError, rhythm_of

# The input a period asked for in the interview gives the command (docs/tools.md, "Periods").
PERIOD_INPUTS: dict[str, dict[str, str]] = {
    "today": {"start": "{{today}}", "end": "{{today}}"},
    "yesterday": {"start": "{{yesterday}}", "end": "{{yesterday}}"},
    "this_week": {"start": "{{this_week.start}}", "end": "{{this_week.end}}"},
    "last_week": {"start": "{{last_week.start}}", "end": "{{last_week.end}}"},
    "this_month": {"start": "{{this_month.start}}", "end": "{{this_month.end}}"},
    "last_month": {"start": "{{last_month.start}}", "end": "{{last_month.end}}"},
    "since_last_run": {"since": "{{last_success}}"},
}


# The periods in words, for the offer ("each run covering the week before").
PERIOD_WORDS = {"today": "the day it runs", "yesterday": "the day before",
                "this_week": "the week it runs in", "last_week": "the week before",
                "this_month": "the month it runs in", "last_month": "the month before",
                "since_last_run": "everything since the last successful run"}


def last_success_of(schedule: Schedule) -> datetime:
    """When the schedule's last successful run was due; before the first, its creation."""
    found = (Invocation.objects.filter(schedule=schedule, status=Invocation.Status.OK)
             .order_by("-created_at", "-id").values_list("scheduled_for", "created_at").first())
    if found is None:
        return schedule.created_at
    return found[0] or found[1]


@dataclass(frozen=True)
class Preview:
    """The next run times of a schedule and what the first of them will send."""

    runs: list[datetime]
    words: list[str]
    payload: Any
    period: str

    @property
    def next_words(self) -> str:
        """ "Monday 8 December 2025 08:00 CET, period 1–7 December 2025" """
        if not self.words:
            return "no run in the next fifty years"
        return self.words[0] + (f", {self.period}" if self.period else "")

    @property
    def payload_json(self) -> str:
        return json.dumps(self.payload, indent=2, ensure_ascii=False)


def schedule_preview(schedule: Schedule, *, count: int = 5) -> Preview:
    """From the schedule's next due time (a missed one counts: it runs once when back)."""
    rhythm = rhythm_of(schedule)
    first = schedule.next_run_at
    later = next_runs(rhythm.rule, rhythm.zone, first, count - 1) if count > 1 else []
    runs = [first, *later]
    periods = Periods(first, rhythm.zone, last_success_of(schedule))
    return Preview(runs=runs, words=[moment_words(run, rhythm.zone) for run in runs],
                   payload=payload_fill(schedule.payload, periods),
                   period=period_words(schedule.payload, periods))


@dataclass(frozen=True)
class RunRow:
    """One recent run of a schedule, as its page says it."""

    invocation: Invocation
    when: str
    outcome: str  # ok, failed, not_started, waiting
    words: str


def run_rows(schedule: Schedule, calls: list[Invocation]) -> list[RunRow]:
    try:
        zone = rhythm_of(schedule).zone
    except ScheduleError:
        zone = timezone.get_default_timezone()
    return [RunRow(invocation=call, when=moment_words(call.scheduled_for or call.created_at,
                                                      zone),
                   outcome=_outcome(call), words=_run_words(call)) for call in calls]


def _outcome(call: Invocation) -> str:
    return {Invocation.Status.OK: "ok", Invocation.Status.FAILED: "failed",
            Invocation.Status.REFUSED: "not_started"}.get(Invocation.Status(call.status),
                                                          "waiting")


def _run_words(call: Invocation) -> str:
    if call.status == Invocation.Status.OK:
        return f"Succeeded in {call.duration_ms} ms."
    if call.status == Invocation.Status.FAILED:
        return f"Failed: {call.error}"
    if call.status == Invocation.Status.REFUSED:
        return f"Could not start: {call.error}"
    return "Running now." if call.status == Invocation.Status.RUNNING else "Waiting for a worker."


# -- the schedule the request asked for ----------------------------------------------------------


@dataclass(frozen=True)
class Offer:
    """The spec's `schedule` made into a schedule's fields (the form starts with them)."""

    words: str  # the requester's own ("every Monday morning")
    when: str  # "" when the spec's `when` could not be read
    rule: ScheduleRule | None
    period: str
    command: str
    payload: dict[str, object] = field(default_factory=dict)

    @property
    def rhythm_words(self) -> str:
        return rule_words(self.rule) if self.rule is not None else ""

    @property
    def payload_json(self) -> str:
        return json.dumps(self.payload, ensure_ascii=False)

    @property
    def period_words(self) -> str:
        return PERIOD_WORDS.get(self.period, "")


def schedule_offer(version: PluginVersion) -> Offer | None:
    """The schedule the version's request asked for, or None (only when clicked)."""
    asked = (version.spec or {}).get("schedule") if isinstance(version.spec, dict) else None
    if not isinstance(asked, dict) or not (asked.get("when") or asked.get("words")):
        return None
    when = str(asked.get("when") or "")
    try:
        rule: ScheduleRule | None = schedule_rule_parse(when)
    except RuleError:
        rule, when = None, ""
    period = str(asked.get("period") or "")
    payload: dict[str, object] = dict(PERIOD_INPUTS.get(period, {}))
    return Offer(words=str(asked.get("words") or "")[:200], when=rule.text if rule else when,
                 rule=rule, period=period if payload else "",
                 command=_offered_command(version, asked, payload), payload=payload)


def _offered_command(version: PluginVersion, asked: dict[str, object],
                     payload: Mapping[str, object]) -> str:
    """The spec's `schedule.command` if it names one; else the first command that takes the
    period's fields; else the first command."""
    names = command_names(version)
    if asked.get("command") in names:
        return str(asked["command"])
    for name in names:
        if payload and set(payload) <= {f.name for f in declared_inputs(version, name)}:
            return name
    return names[0] if names else ""
