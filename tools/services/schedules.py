"""Schedules: a command with a fixed input, run every N minutes, every N hours, or every day at
a time (UTC). Plain choices instead of cron: the people who set them up are not programmers,
and three choices cover what they ask for ("every morning at 7", "every 15 minutes").

The watchdog's quick sweep (every worker heartbeat, a few seconds; one worker at a time)
calls `schedules_due_send`. Each due schedule is claimed with a guarded update of its
`next_run_at`, so two workers sweeping at once start it once. A schedule missed while
nothing ran (the installation was down) runs once when it is back, then keeps its rhythm from
then on: no burst of catch-up runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from marketplace.models import Plugin
from teams.models import Membership, Team
from teams.services.audit import audit_record
from tools.models import Activation, Invocation, Schedule
from tools.services.invocations import (
    Caller,
    InvocationRefused,
    invocation_check,
    invocation_queue,
)
from tools.services.schedule_owners import (
    owner_left_reason,
    schedule_pause,
    schedule_still_owned,
)

Every = Schedule.Every
LIMITS = {Every.MINUTES: (5, 1440), Every.HOURS: (1, 24), Every.DAY: (1, 1)}
MAX_NAME_CHARS = 80


class ScheduleError(Exception):
    """A schedule that cannot be saved as asked; `str()` says why in plain words."""


def next_run(*, every: str, interval: int, at_time: time | None, after: datetime) -> datetime:
    """The first moment strictly after `after` the schedule is due (UTC)."""
    if every == Every.MINUTES:
        return after + timedelta(minutes=interval)
    if every == Every.HOURS:
        return after + timedelta(hours=interval)
    if at_time is None:
        raise ScheduleError("Say at what time of day it runs.")
    after = after.astimezone(UTC)
    today = datetime.combine(after.date(), at_time.replace(tzinfo=None), tzinfo=UTC)
    return today if today > after else today + timedelta(days=1)


def describe(schedule: Schedule) -> str:
    """The rhythm in words, as the page shows it."""
    if schedule.every == Every.MINUTES:
        return f"every {schedule.interval} minutes"
    if schedule.every == Every.HOURS:
        return "every hour" if schedule.interval == 1 else f"every {schedule.interval} hours"
    return f"every day at {schedule.at_time:%H:%M} UTC" if schedule.at_time else "every day"


def _may_schedule(team: Team, user: User) -> None:
    # Reviewers and admins: a schedule spends the team's sandbox time without anyone asking.
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None or not membership.can_review:
        raise ScheduleError(f"Only reviewers and admins of {team.name} set up schedules.")


def _rhythm_check(every: str, interval: int, at_time: time | None) -> None:
    if every not in LIMITS:
        raise ScheduleError("Choose how often it runs.")
    low, high = LIMITS[Every(every)]
    if not low <= interval <= high:
        unit = "minutes" if every == Every.MINUTES else "hours"
        raise ScheduleError(f"Every {low} to {high} {unit}.")
    if every == Every.DAY and at_time is None:
        raise ScheduleError("Say at what time of day it runs (UTC), like 07:30.")


def schedule_create(*, activation: Activation, user: User, name: str, command: str,
                    payload: dict[str, Any], every: str, interval: int = 1,
                    at_time: time | None = None) -> Schedule:
    """A new schedule of the tool in use; its input is checked now as a call's would be."""
    _may_schedule(activation.team, user)
    name = " ".join(name.split())[:MAX_NAME_CHARS] or command
    if every == Every.DAY:
        interval = 1
    _rhythm_check(every, interval, at_time)
    try:
        invocation_check(activation=activation, command=command, payload=payload,
                         settings_needed=False)  # refused when due, while one is missing
    except InvocationRefused as exc:
        raise ScheduleError(str(exc)) from exc
    first = next_run(every=every, interval=interval, at_time=at_time, after=timezone.now())
    with transaction.atomic():
        schedule = Schedule.objects.create(
            team=activation.team, plugin=activation.plugin, owner=user, name=name,
            command=command, payload=payload, every=every, interval=interval, at_time=at_time,
            next_run_at=first)
        audit_record(actor=user, action="tool.schedule_created", team=activation.team,
                     target=schedule, after={"plugin": activation.plugin.name,
                                             "command": command, "when": describe(schedule)})
    return schedule


def schedule_delete(*, team: Team, plugin: Plugin, user: User, schedule_id: int) -> bool:
    _may_schedule(team, user)
    schedule = Schedule.objects.filter(pk=schedule_id, team=team, plugin=plugin).first()
    if schedule is None:
        return False
    with transaction.atomic():
        audit_record(actor=user, action="tool.schedule_deleted", team=team, target=schedule,
                     before={"command": schedule.command, "when": describe(schedule)})
        schedule.delete()
    return True


def schedules_owner_left(*, team: Team, user: User, actor: User | None = None) -> list[int]:
    """Pause the schedules `user` set up in `team` (they left it): a schedule runs as its
    owner and tells them when it fails, so it must not run on for someone gone. The tool's
    page says why; a reviewer or admin may resume it as theirs. Returns the paused ids."""
    paused = []
    for schedule in Schedule.objects.select_related("owner", "plugin").filter(
            team=team, owner=user, enabled=True):
        if schedule_pause(schedule=schedule, reason=owner_left_reason(schedule), actor=actor):
            paused.append(schedule.pk)
    return paused


def schedule_resume(*, team: Team, plugin: Plugin, user: User, schedule_id: int) -> bool:
    """Run a paused schedule again, now as `user`'s (they are told of its failures)."""
    _may_schedule(team, user)
    schedule = Schedule.objects.filter(pk=schedule_id, team=team, plugin=plugin,
                                       enabled=False).first()
    if schedule is None:
        return False
    following = next_run(every=schedule.every, interval=schedule.interval,
                         at_time=schedule.at_time, after=timezone.now())
    with transaction.atomic():
        if not Schedule.objects.filter(pk=schedule.pk, enabled=False).update(
                enabled=True, paused_reason="", owner=user, failing=False,
                next_run_at=following):
            return False
        audit_record(actor=user, action="tool.schedule_resumed", team=team, target=schedule,
                     after={"command": schedule.command, "owner": user.get_username()})
    return True


def schedules_due_send(*, now: datetime | None = None) -> list[int]:
    """Queue one call for each schedule that is due; returns their ids. Never twice for the
    same due time: the claim is an update guarded by the `next_run_at` that was read."""
    now = now or timezone.now()
    sent: list[int] = []
    due = (Schedule.objects.select_related("team", "plugin", "owner")
           .filter(enabled=True, next_run_at__lte=now).order_by("next_run_at"))
    for schedule in due[:200]:
        if _schedule_fire(schedule, now):
            sent.append(schedule.pk)
    return sent


def _schedule_fire(schedule: Schedule, now: datetime) -> bool:
    following = next_run(every=schedule.every, interval=schedule.interval,
                         at_time=schedule.at_time, after=now)
    with transaction.atomic():
        if not Schedule.objects.filter(pk=schedule.pk, next_run_at=schedule.next_run_at).update(
                next_run_at=following, last_run_at=now):
            return False  # another sweep claimed it
        activation = (Activation.objects.select_related("version")
                      .filter(team_id=schedule.team_id, plugin_id=schedule.plugin_id,
                              status=Activation.Status.ACTIVE).first())
        if activation is None:
            return False  # the team stopped using the plugin: the schedule waits, does nothing
        if not schedule_still_owned(schedule):
            return False  # the owner left (checked again here, at run time): paused
        invocation_queue(activation=activation, command=schedule.command,
                         payload=schedule.payload,
                         caller=Caller(Invocation.Caller.SCHEDULE, user_id=schedule.owner_id,
                                       schedule=schedule))
    return True
