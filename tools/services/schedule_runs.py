"""The runs of schedules: what is due, the catch-up rule, and a run that cannot start
(docs/tools.md, "Schedules").

The watchdog's quick sweep (every worker heartbeat, a few seconds; one worker at a time) calls
`schedules_due_send`; `manage.py schedules_run_due` calls `schedules_due_run` (the same road)
and then waits for the calls. Each due schedule is claimed with a guarded update of its
`next_run_at`, so two sweeps at once start it once.

Catching up: a schedule whose runs were missed (the portal was stopped) runs once when it is
back, not once per missed period. That one run stands for the latest run time that passed (its
periods are that moment's: the Monday report after a two-week stop covers last week), and its
entry says it ran late and how many runs it stands for. Then the schedule keeps its rhythm.

A run that cannot start (a setting still missing, a disabled version: the refusal of
`invocation_check`, the one road every call takes; the tool no longer in use; its owner gone) is
recorded as a refused call with the words of why, and its owner is told (schedule_notes.py).
"""

from __future__ import annotations

import time as clock
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from tools.models import Activation, Invocation, Schedule
from tools.schedule_selectors import last_success_of
from tools.services.calendar import (
    RuleError,
    latest_run,
    moment_words,
    next_run,
    runs_between,
)
from tools.services.invocations import (
    OWNER_LEFT,
    Caller,
    InvocationRefused,
    invocation_check,
    invocation_perform,
    invocation_queue,
)
from tools.services.periods import Periods, payload_fill
from tools.services.schedule_notes import NOT_STARTED, schedule_outcome_tell
from tools.services.schedule_owners import schedule_pause, schedule_still_owned
from tools.services.schedules import Rhythm, ScheduleError, rhythm_of

# Later than this after its time, a run says it ran late (the sweep runs every few seconds).
LATE_AFTER = timedelta(minutes=5)
MISSED_COUNTED = 1000
SWEEP_BATCH = 200


@dataclass(frozen=True)
class ScheduleRun:
    """One due schedule handled: the call it queued, or why it could not start."""

    schedule: Schedule
    scheduled_for: datetime
    invocation: Invocation | None
    started: bool
    reason: str = ""
    note: str = ""
    missed: int = 0


def schedules_due_send(*, now: datetime | None = None) -> list[int]:
    """The watchdog's sweep: queue one call for each schedule that is due; returns the ids of
    the schedules whose call was queued."""
    return [run.schedule.pk for run in schedules_due_run(now=now) if run.started]


def schedules_due_run(*, now: datetime | None = None) -> list[ScheduleRun]:
    """Handle every schedule due at `now` once (never twice for the same due time)."""
    now = now or timezone.now()
    due = (Schedule.objects.select_related("team", "plugin", "owner")
           .filter(enabled=True, next_run_at__lte=now).order_by("next_run_at", "pk"))
    handled = []
    for schedule in due[:SWEEP_BATCH]:
        run = _schedule_fire(schedule, now)
        if run is not None:
            handled.append(run)
    for run in handled:
        if run.invocation is not None and not run.started:
            schedule_outcome_tell(run.invocation)
    return handled


def _schedule_fire(schedule: Schedule, now: datetime) -> ScheduleRun | None:
    try:
        rhythm = rhythm_of(schedule)
    except ScheduleError as exc:  # a rule this portal cannot read: paused, saying why
        schedule_pause(schedule=schedule, reason=f"Paused: its rhythm cannot be read ({exc})")
        return None
    due = schedule.next_run_at
    stands_for = max(latest_run(rhythm.rule, rhythm.zone, now) or due, due)
    missed = runs_between(rhythm.rule, rhythm.zone, due, stands_for, limit=MISSED_COUNTED)
    note = _catch_up_note(rhythm, due=due, stands_for=stands_for, now=now, missed=missed)
    try:
        following = next_run(rhythm.rule, rhythm.zone, now)
    except RuleError as exc:  # a cron rule with no run in fifty years
        schedule_pause(schedule=schedule, reason=f"Paused: {exc}")
        return None
    with transaction.atomic():
        if not Schedule.objects.filter(pk=schedule.pk, next_run_at=due).update(
                next_run_at=following, last_run_at=now):
            return None  # another sweep claimed it
        found = ScheduleRun(schedule=schedule, scheduled_for=stands_for, invocation=None,
                            started=False, note=note, missed=missed)
        return _schedule_start(found, rhythm)


def _schedule_start(run: ScheduleRun, rhythm: Rhythm) -> ScheduleRun:
    schedule = run.schedule
    activation = (Activation.objects.select_related("version", "team", "plugin")
                  .filter(team_id=schedule.team_id, plugin_id=schedule.plugin_id,
                          status=Activation.Status.ACTIVE).first())
    if activation is None:
        return _not_in_use(run)
    if not schedule_still_owned(schedule):  # checked again at run time: now paused
        return _not_started(run, activation, OWNER_LEFT, kind="owner_left")
    periods = Periods(run.scheduled_for, rhythm.zone, last_success_of(schedule))
    payload = payload_fill(schedule.payload, periods)
    try:
        invocation_check(activation=activation, command=schedule.command, payload=payload)
    except InvocationRefused as exc:
        return _not_started(run, activation, str(exc),
                            kind="settings_missing" if exc.missing else NOT_STARTED)
    invocation = invocation_queue(activation=activation, command=schedule.command,
                                  payload=payload,
                                  caller=Caller(Invocation.Caller.SCHEDULE,
                                                user_id=schedule.owner_id, schedule=schedule))
    Invocation.objects.filter(pk=invocation.pk).update(scheduled_for=run.scheduled_for,
                                                       schedule_note=run.note)
    invocation.scheduled_for, invocation.schedule_note = run.scheduled_for, run.note
    return ScheduleRun(schedule=schedule, scheduled_for=run.scheduled_for, invocation=invocation,
                       started=True, note=run.note, missed=run.missed)


def _not_started(run: ScheduleRun, activation: Activation, reason: str, *,
                 kind: str = NOT_STARTED) -> ScheduleRun:
    """The run is in the log as refused, with why; the sweep tells the owner after commit."""
    schedule = run.schedule
    invocation = Invocation.objects.create(
        team_id=schedule.team_id, plugin_id=schedule.plugin_id,
        version_id=activation.version_id, command=schedule.command,
        caller=Invocation.Caller.SCHEDULE, user_id=schedule.owner_id, schedule=schedule,
        status=Invocation.Status.REFUSED, error=reason, error_kind=kind,
        scheduled_for=run.scheduled_for, schedule_note=run.note, finished_at=timezone.now())
    return ScheduleRun(schedule=schedule, scheduled_for=run.scheduled_for, invocation=invocation,
                       started=False, reason=reason, note=run.note, missed=run.missed)


def _not_in_use(run: ScheduleRun) -> ScheduleRun:
    """The team stopped using the tool: the schedule waits for it to be activated again. The
    first such run says so (and its owner is told); the next ones, quietly, do nothing."""
    schedule = run.schedule
    reason = (f"{schedule.plugin.name} is no longer in use by {schedule.team.name}, so the "
              "schedule did not start; it runs again once the tool is activated again.")
    last = (Activation.objects.filter(team_id=schedule.team_id, plugin_id=schedule.plugin_id)
            .order_by("-created_at", "-id").first())
    if last is None or schedule.failing:
        return ScheduleRun(schedule=schedule, scheduled_for=run.scheduled_for, invocation=None,
                           started=False, reason=reason, note=run.note, missed=run.missed)
    return _not_started(run, last, reason)


def _catch_up_note(rhythm: Rhythm, *, due: datetime, stands_for: datetime, now: datetime,
                   missed: int) -> str:
    """What the run's entry says when it ran late or stands for missed runs ("" otherwise)."""
    zone = rhythm.zone
    said = []
    if missed:
        many = f"more than {MISSED_COUNTED}" if missed >= MISSED_COUNTED else str(missed)
        said.append(f"Caught up: the portal was not running, so {many} earlier "
                    f"run{'s' if missed != 1 else ''} from {moment_words(due, zone)} did not "
                    f"happen; this one run stands for them and for "
                    f"{moment_words(stands_for, zone)}.")
    if now - stands_for > LATE_AFTER:
        said.append(f"Ran late: due {moment_words(stands_for, zone)}, started "
                    f"{moment_words(now, zone)}.")
    return " ".join(said)[:300]


def schedule_runs_finish(runs: list[ScheduleRun], *, timeout_s: float) -> list[Invocation | None]:
    """Run the calls `runs` queued here and now (`manage.py schedules_run_due`); a call a worker
    took first is waited for up to `timeout_s`. Each run's invocation as it ended (or None)."""
    finished: list[Invocation | None] = []
    for run in runs:
        if run.invocation is None or not run.started:
            finished.append(run.invocation)
            continue
        done = invocation_perform(invocation_id=run.invocation.pk)
        finished.append(done or _waited_for(run.invocation.pk, timeout_s))
    return finished


def _waited_for(invocation_id: int, timeout_s: float) -> Invocation:
    deadline = clock.monotonic() + timeout_s
    open_states = (Invocation.Status.PENDING, Invocation.Status.RUNNING)
    while True:
        invocation = Invocation.objects.get(pk=invocation_id)
        if invocation.status not in open_states or clock.monotonic() > deadline:
            return invocation
        clock.sleep(0.5)
