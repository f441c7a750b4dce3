"""The calendar of schedules: the `when` words, cron expressions, time zones and run times
(docs/tools.md, "Schedules").

`schedule_rule_parse` reads the one grammar every door uses (the form builds these words, the
interview writes them in the spec, `manage.py tool_schedule --when` takes them):

    every N minutes          N from 5 to 1440        ("every 15 minutes")
    every N hours            N from 1 to 24          ("every hour", "every 2 hours")
    daily HH:MM                                      ("daily 07:30")
    weekly DAYS HH:MM        DAYS: mon..sun, a list or a range ("weekly mon,thu 08:00",
                                                      "weekly mon-fri 08:00")
    monthly D HH:MM          D from 1 to 31          ("monthly 1 08:00")
    monthly last HH:MM       the last day of the month
    monthly ORD-DAY HH:MM    ORD: first, second, third, fourth, last ("monthly first-mon 08:00")

Times of day are wall-clock times in the schedule's time zone, laid out by python-dateutil's
rrule; a cron expression (`cron_rule_parse`) is laid out by cronsim. Every N minutes or hours
counts elapsed time instead (aligned on whole hours of UTC), so a clock change neither skips
nor doubles a run. On the day clocks go forward a time that does not exist (02:30 in Berlin on
the last Sunday of March) runs an hour later, at 03:30; on the day they go back a time that
happens twice runs once, the first time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from itertools import count
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from cronsim import CronSim, CronSimError
from dateutil import rrule

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# In English whatever the process's locale (strftime's %B follows it).
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
               "September", "October", "November", "December")
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "last": -1}
INTERVALS = {"minutes": (5, 1440), "hours": (1, 24)}
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
# How far before a moment its wall-clock time may lie once a clock went back (at most 2 h
# anywhere; tzdata's largest change).
LOOKBACK = timedelta(hours=3)
TIME = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")
GRAMMAR = ("every 15 minutes, every 2 hours, daily 07:30, weekly mon 08:00, weekly mon,thu "
           "08:00, monthly 1 08:00, monthly last 08:00 or monthly first-mon 08:00")


class RuleError(ValueError):
    """Words or a cron expression that say no rhythm; `str()` says why in plain words."""


@dataclass(frozen=True)
class ScheduleRule:
    """A rhythm: `kind` is minutes, hours, daily, weekly, monthly or cron."""

    kind: str
    interval: int = 0
    at: time | None = None
    days: tuple[int, ...] = ()  # weekly: 0 is Monday
    month_day: int = 0  # monthly: 1..31, -1 the last day, 0 when by weekday
    nth: int = 0  # monthly by weekday: 1..4, -1 the last one
    weekday: int = 0
    cron: str = ""

    @property
    def text(self) -> str:
        """The rule in the `when` words (a cron rule: its expression)."""
        at = f"{self.at:%H:%M}" if self.at else ""
        if self.kind == "minutes":
            return f"every {self.interval} minutes"
        if self.kind == "hours":
            return "every 1 hour" if self.interval == 1 else f"every {self.interval} hours"
        if self.kind == "daily":
            return f"daily {at}"
        if self.kind == "weekly":
            return f"weekly {','.join(DAYS[d] for d in self.days)} {at}"
        if self.kind == "monthly":
            return f"monthly {_month_key(self)} {at}"
        return self.cron


def _month_key(rule: ScheduleRule) -> str:
    if rule.month_day == -1:
        return "last"
    if rule.month_day:
        return str(rule.month_day)
    ordinal = next(word for word, n in ORDINALS.items() if n == rule.nth)
    return f"{ordinal}-{DAYS[rule.weekday]}"


# -- reading -------------------------------------------------------------------------------------


def schedule_rule_parse(text: str) -> ScheduleRule:
    """The rule the `when` words say (the grammar above); RuleError in plain words."""
    words = " ".join(str(text).lower().replace(", ", ",").split())
    head, _, rest = words.partition(" ")
    if head == "every":
        return _every(rest)
    if head in ("daily", "weekly", "monthly"):
        *middle, clock = rest.split(" ") if rest else [""]
        at = _time_of(clock, words)
        if head == "daily":
            if middle:
                raise RuleError(f"“{text}”: daily takes only a time, like daily 07:30.")
            return ScheduleRule(kind="daily", at=at)
        if len(middle) != 1:
            example = "weekly mon 08:00" if head == "weekly" else "monthly 1 08:00"
            raise RuleError(f"“{text}”: say which {'days' if head == 'weekly' else 'day'} "
                            f"and a time, like {example}.")
        if head == "weekly":
            return ScheduleRule(kind="weekly", at=at, days=_days(middle[0]))
        return _monthly(middle[0], at)
    raise RuleError(f"“{text}” is not a rhythm the schedule knows. Write one of: {GRAMMAR}.")


def _every(rest: str) -> ScheduleRule:
    parts = rest.split(" ")
    if parts in (["hour"], ["minute"]):
        parts = ["1", parts[0]]
    if len(parts) != 2 or not parts[0].isdigit():
        raise RuleError(f"“every {rest}”: write every N minutes or every N hours, like every "
                        "15 minutes.")
    unit = {"minute": "minutes", "minutes": "minutes", "min": "minutes", "mins": "minutes",
            "hour": "hours", "hours": "hours"}.get(parts[1])
    if unit is None:
        raise RuleError(f"“every {rest}”: say minutes or hours.")
    number = int(parts[0])
    low, high = INTERVALS[unit]
    if not low <= number <= high:
        raise RuleError(f"Every {low} to {high} {unit}.")
    return ScheduleRule(kind=unit, interval=number)


def _time_of(clock: str, words: str) -> time:
    found = TIME.fullmatch(clock)
    if not found:
        raise RuleError(f"“{words}”: end with the time of day as HH:MM, like 08:00.")
    return time(int(found.group(1)), int(found.group(2)))


def _day(name: str) -> int:
    key = name[:3]
    if key not in DAYS or not DAY_NAMES[DAYS.index(key)].lower().startswith(name):
        raise RuleError(f"“{name}” is not a day; write mon, tue, wed, thu, fri, sat or sun.")
    return DAYS.index(key)


def _days(text: str) -> tuple[int, ...]:
    chosen: set[int] = set()
    for item in text.split(","):
        first, dash, last = item.partition("-")
        if not dash:
            chosen.add(_day(item))
            continue
        start, end = _day(first), _day(last)
        if end < start:
            raise RuleError(f"“{item}”: a range of days goes forward, like mon-fri.")
        chosen.update(range(start, end + 1))
    return tuple(sorted(chosen))


def _monthly(key: str, at: time) -> ScheduleRule:
    if key == "last":
        return ScheduleRule(kind="monthly", at=at, month_day=-1)
    if key.isdigit():
        if not 1 <= int(key) <= 31:
            raise RuleError("A day of the month is 1 to 31 (or last, for the last day).")
        return ScheduleRule(kind="monthly", at=at, month_day=int(key))
    ordinal, dash, day = key.partition("-")
    if not dash or ordinal not in ORDINALS:
        raise RuleError(f"“{key}”: write a day of the month (1 to 31), last, or a weekday "
                        "like first-mon, second-tue, last-fri.")
    return ScheduleRule(kind="monthly", at=at, nth=ORDINALS[ordinal], weekday=_day(day))


def cron_rule_parse(expression: str) -> ScheduleRule:
    """A rule from a cron expression of five fields (minute hour day month weekday)."""
    expression = " ".join(str(expression).split())
    if len(expression.split(" ")) != 5:
        raise RuleError(f"“{expression}”: a cron expression has five fields: minute, hour, day "
                        "of the month, month, day of the week (like 0 8 * * 1).")
    try:
        CronSim(expression, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        raise RuleError(f"“{expression}” is not a cron expression this portal reads: "
                        f"{str(exc).lower()}.") from exc
    return ScheduleRule(kind="cron", cron=expression)


def time_zone_get(name: str) -> ZoneInfo:
    """The IANA time zone `name` (like Europe/Berlin); RuleError for any other text."""
    name = name.strip()
    if name in ("UTC", "utc"):
        return ZoneInfo("UTC")
    if name not in time_zones():
        raise RuleError(f"“{name}” is not a time zone; write one like Europe/Berlin or UTC.")
    try:
        return ZoneInfo(name)
    except ZoneInfoNotFoundError as exc:  # pragma: no cover - listed but not loadable
        raise RuleError(f"The time zone “{name}” cannot be read on this installation.") from exc


_ZONES: list[str] = []


def time_zones() -> list[str]:
    """Every IANA time zone name this installation knows, sorted (read once)."""
    if not _ZONES:
        _ZONES.extend(sorted(available_timezones()))
    return _ZONES


# -- run times -----------------------------------------------------------------------------------


def runs_after(rule: ScheduleRule, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """The rule's run times strictly after `after`, in increasing order, as UTC moments."""
    if rule.kind in INTERVALS:
        step = timedelta(minutes=rule.interval) if rule.kind == "minutes" \
            else timedelta(hours=rule.interval)
        first = (after - EPOCH) // step + 1
        return (EPOCH + n * step for n in count(first))
    if rule.kind == "cron":
        return (moment.astimezone(UTC) for moment in
                CronSim(rule.cron, after.astimezone(zone).replace(second=0, microsecond=0))
                if moment.astimezone(UTC) > after)
    wall = after.astimezone(zone).replace(tzinfo=None)
    start = (wall - LOOKBACK).replace(second=0, microsecond=0)
    # fold=0 (zoneinfo's default): a time that happens twice is its first; one that does not
    # exist is read with the offset before the change, an hour later on the clock.
    return (moment for moment in (candidate.replace(tzinfo=zone).astimezone(UTC)
                                  for candidate in _wall_rule(rule, start).xafter(start))
            if moment > after)


def _wall_rule(rule: ScheduleRule, start: datetime) -> rrule.rrule:
    at = rule.at or time(0, 0)
    common = {"dtstart": start, "byhour": at.hour, "byminute": at.minute, "bysecond": 0}
    if rule.kind == "daily":
        return rrule.rrule(rrule.DAILY, **common)
    if rule.kind == "weekly":
        return rrule.rrule(rrule.WEEKLY, byweekday=rule.days, **common)
    if rule.month_day:
        # A day a month lacks (the 31st of April) is skipped, as RFC 5545 says.
        return rrule.rrule(rrule.MONTHLY, bymonthday=rule.month_day, **common)
    return rrule.rrule(rrule.MONTHLY, byweekday=rrule.weekday(rule.weekday, rule.nth),
                       **common)


def next_run(rule: ScheduleRule, zone: ZoneInfo, after: datetime) -> datetime:
    """The first run time strictly after `after` (UTC)."""
    found = next(runs_after(rule, zone, after), None)
    if found is None:
        raise RuleError("This rule has no run in the next fifty years.")
    return found


def next_runs(rule: ScheduleRule, zone: ZoneInfo, after: datetime, n: int) -> list[datetime]:
    times = runs_after(rule, zone, after)
    return [moment for _, moment in zip(range(n), times, strict=False)]


# Windows looked back through for the latest run time: a rule runs at least once in one of them
# (every rhythm of the `when` words within 40 days; a rare cron rule within eight years).
WINDOWS = (timedelta(hours=2), timedelta(days=2), timedelta(days=40), timedelta(days=400),
           timedelta(days=3000))


def latest_run(rule: ScheduleRule, zone: ZoneInfo, moment: datetime) -> datetime | None:
    """The last run time at or before `moment` (None if none in eight years)."""
    for window in WINDOWS:
        latest = None
        for run in runs_after(rule, zone, moment - window):
            if run > moment:
                break
            latest = run
        if latest is not None:
            return latest
    return None


def runs_between(rule: ScheduleRule, zone: ZoneInfo, start: datetime, end: datetime, *,
                 limit: int = 1000) -> int:
    """How many run times lie in [start, end), counted up to `limit`."""
    found = 0
    for run in runs_after(rule, zone, start - timedelta(microseconds=1)):
        if run >= end or found >= limit:
            break
        found += 1
    return found


# -- words ---------------------------------------------------------------------------------------


def rule_words(rule: ScheduleRule) -> str:
    """The rhythm in plain words ("every Monday and Thursday at 08:00")."""
    at = f" at {rule.at:%H:%M}" if rule.at else ""
    if rule.kind == "minutes":
        return f"every {rule.interval} minutes"
    if rule.kind == "hours":
        return "every hour" if rule.interval == 1 else f"every {rule.interval} hours"
    if rule.kind == "daily":
        return f"every day{at}"
    if rule.kind == "weekly":
        return f"every {_and([DAY_NAMES[d] for d in rule.days])}{at}"
    if rule.kind == "monthly":
        if rule.month_day == -1:
            return f"on the last day of every month{at}"
        if rule.month_day:
            skipped = " (months without one are skipped)" if rule.month_day > 28 else ""
            return f"on the {_nth(rule.month_day)} of every month{at}{skipped}"
        ordinal = next(word for word, n in ORDINALS.items() if n == rule.nth)
        return f"on the {ordinal} {DAY_NAMES[rule.weekday]} of every month{at}"
    return f"when the cron expression {rule.cron} says ({_cron_explained(rule.cron)})"


def _cron_explained(expression: str) -> str:
    said = CronSim(expression, datetime(2000, 1, 1, tzinfo=UTC)).explain()
    return said[:1].lower() + said[1:]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _nth(day: int) -> str:
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def moment_words(moment: datetime, zone: ZoneInfo) -> str:
    """A run time as a person reads it, in the schedule's time zone: "Monday 8 December 2025
    08:00 CET"."""
    local = moment.astimezone(zone)
    return (f"{DAY_NAMES[local.weekday()]} {local.day} {MONTH_NAMES[local.month - 1]} "
            f"{local.year} {local:%H:%M} {local.tzname()}")
