"""Schedules: a command with an input, run on a calendar rule in a time zone (calendar.py: the
`when` words or a cron expression), the period placeholders of its input filled in at each run
(periods.py). Setting one up, deleting, pausing and resuming it are here; its runs (the
watchdog's sweep, the catch-up rule, a run that cannot start) are in schedule_runs.py.

A schedule's time zone is the one chosen when it was set up; the form starts with the team's:
the one the team's latest schedule uses, else the installation's (TIME_ZONE). Settings are not
asked for when a schedule is saved (an admin may enter them later): a run while one is missing
does not start and says why (docs/tools.md, "Schedules").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from autocoder.calling.payload import payload_errors
from marketplace.models import Plugin
from teams.models import Membership, Team
from teams.services.audit import audit_record
from tools.declared import command_names, declared_inputs
from tools.json_input import json_input_problem
from tools.models import Activation, Schedule
from tools.services.calendar import (
    RuleError,
    ScheduleRule,
    cron_rule_parse,
    next_run,
    rule_words,
    schedule_rule_parse,
    time_zone_get,
)
from tools.services.events import json_size
from tools.services.invocations import MAX_PAYLOAD_BYTES
from tools.services.periods import PeriodError, Periods, payload_fill, placeholders_check
from tools.services.schedule_owners import owner_left_reason, schedule_pause

MAX_NAME_CHARS = 80


class ScheduleError(Exception):
    """A schedule that cannot be saved as asked; `str()` says why in plain words."""


@dataclass(frozen=True)
class Rhythm:
    """A schedule's rule and the time zone its times are in."""

    rule: ScheduleRule
    zone: ZoneInfo

    @property
    def words(self) -> str:
        return f"{rule_words(self.rule)} ({self.zone.key})"


def rhythm_read(*, when: str = "", cron: str = "", time_zone: str = "") -> Rhythm:
    """The rhythm the `when` words or the cron expression say, in `time_zone`."""
    try:
        rule = cron_rule_parse(cron) if cron.strip() else schedule_rule_parse(when)
        return Rhythm(rule=rule, zone=time_zone_get(time_zone or "UTC"))
    except RuleError as exc:
        raise ScheduleError(str(exc)) from exc


def rhythm_of(schedule: Schedule) -> Rhythm:
    return rhythm_read(when=schedule.when, cron=schedule.cron, time_zone=schedule.time_zone)


def describe(schedule: Schedule) -> str:
    """The rhythm in words, as the page shows it ("every Monday at 08:00 (Europe/Berlin)")."""
    try:
        return rhythm_of(schedule).words
    except ScheduleError as exc:  # a rule saved before this portal read it: said, not hidden
        return f"{schedule.cron or schedule.when} ({exc})"


def team_time_zone(team: Team) -> str:
    """The time zone a new schedule of `team` starts with (see the module's docstring)."""
    latest = Schedule.objects.filter(team=team).order_by("-created_at", "-id").first()
    return latest.time_zone if latest is not None else (settings.TIME_ZONE or "UTC")


def _may_schedule(team: Team, user: User) -> None:
    # Reviewers and admins: a schedule spends the team's sandbox time without anyone asking.
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None or not membership.can_review:
        raise ScheduleError(f"Only reviewers and admins of {team.name} set up schedules.")


def _input_check(activation: Activation, command: str, payload: dict[str, object]) -> None:
    """The input as a call would check it, filled in for the first run (settings aside)."""
    version = activation.version
    names = command_names(version)
    if command not in names:
        raise ScheduleError(f"Unknown command {command!r}: this plugin has "
                            f"{', '.join(names) or 'no commands'}.")
    problem = json_input_problem(payload)
    if problem is not None:
        raise ScheduleError(problem)
    if json_size(payload) > MAX_PAYLOAD_BYTES:
        raise ScheduleError(f"The input is {json_size(payload) // 1024} KB of JSON; the limit "
                            f"is {MAX_PAYLOAD_BYTES // 1024} KB.")
    problems = payload_errors(declared_inputs(version, command), payload)
    if problems:
        raise ScheduleError("The input does not fit: " + "; ".join(problems) + ".")


def schedule_create(*, activation: Activation, user: User, name: str, command: str,
                    payload: dict[str, object], when: str = "", cron: str = "",
                    time_zone: str = "", now: datetime | None = None) -> Schedule:
    """A new schedule of the tool in use. Its rhythm, time zone and placeholders are checked,
    and its input as its first run would send it."""
    _may_schedule(activation.team, user)
    if not isinstance(payload, dict):
        raise ScheduleError('The input must be a JSON object, like {"text": "hi"}.')
    rhythm = rhythm_read(when=when, cron=cron,
                         time_zone=time_zone or team_time_zone(activation.team))
    try:
        placeholders_check(payload)
    except PeriodError as exc:
        raise ScheduleError(str(exc)) from exc
    now = now or timezone.now()
    try:
        first = next_run(rhythm.rule, rhythm.zone, now)
    except RuleError as exc:
        raise ScheduleError(str(exc)) from exc
    _input_check(activation, command, payload_fill(payload, Periods(first, rhythm.zone, now)))
    name = " ".join(name.split())[:MAX_NAME_CHARS] or command
    rule = rhythm.rule
    with transaction.atomic():
        schedule = Schedule.objects.create(
            team=activation.team, plugin=activation.plugin, owner=user, name=name,
            command=command, payload=payload, when="" if rule.cron else rule.text,
            cron=rule.cron, time_zone=rhythm.zone.key, next_run_at=first)
        audit_record(actor=user, action="tool.schedule_created", team=activation.team,
                     target=schedule, after={"plugin": activation.plugin.name,
                                             "command": command, "when": rhythm.words})
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
    """Run a paused schedule again, now as `user`'s (they are told of its failures), from its
    next time: the runs it missed while paused are not made up."""
    _may_schedule(team, user)
    schedule = Schedule.objects.filter(pk=schedule_id, team=team, plugin=plugin,
                                       enabled=False).first()
    if schedule is None:
        return False
    rhythm = rhythm_of(schedule)
    following = next_run(rhythm.rule, rhythm.zone, timezone.now())
    with transaction.atomic():
        if not Schedule.objects.filter(pk=schedule.pk, enabled=False).update(
                enabled=True, paused_reason="", owner=user, failing=False,
                next_run_at=following):
            return False
        audit_record(actor=user, action="tool.schedule_resumed", team=team, target=schedule,
                     after={"command": schedule.command, "owner": user.get_username()})
    return True
