"""How often the plugin should run by itself, and what period each run covers (spec "schedule",
docs/engine.md; docs/portal.md, "Requesting a plugin"), as the last page of questions asks it.

The answers are kept as typed in `state["schedule"]`:

    {"how": "click" | "daily" | "weekly" | "monthly" | "words", "time": "08:00",
     "days": ["mon"], "day": "1" | "last", "words": "every Monday morning",
     "period": "" | "last_week" | ..., "command": "post-hours"}

"Only when I click" (the default) gives a spec without `schedule`. The other choices give the
`when` words the schedules understand (`daily 07:30`, `weekly mon,thu 08:00`, `monthly 1 08:00`,
`monthly last 08:00`); "in my own words" gives none (`when` null): the admin who activates the
plugin sets the rhythm then. The words are parsed by the schedules' calendar, not here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict

from autocoder.engine.spec_schedule import MAX_WORDS_CHARS

FIELD_HOW, FIELD_TIME, FIELD_DAYS, FIELD_DAY = "sch-how", "sch-time", "sch-days", "sch-day"
FIELD_WORDS, FIELD_PERIOD, FIELD_COMMAND = "sch-words", "sch-period", "sch-command"
HOW: tuple[tuple[str, str], ...] = (
    ("click", "Only when someone clicks (or calls it)"),
    ("daily", "Every day"),
    ("weekly", "Every week, on the days I choose"),
    ("monthly", "Every month, on one day"),
    ("words", "Something else: I say it in my own words below"),
)
DAYS: tuple[tuple[str, str], ...] = (
    ("mon", "Monday"), ("tue", "Tuesday"), ("wed", "Wednesday"), ("thu", "Thursday"),
    ("fri", "Friday"), ("sat", "Saturday"), ("sun", "Sunday"))


def _ordinal(day: int) -> str:
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(day % 10 if day not in (11, 12, 13) else 0, "th")
    return f"the {day}{suffix}"


MONTH_DAYS: tuple[tuple[str, str], ...] = tuple(
    (str(day), _ordinal(day)) for day in range(1, 32)) + (("last", "the last day"),)
PERIODS: tuple[tuple[str, str], ...] = (
    ("", "Nothing in particular: each run works on what it is given"),
    ("today", "Today"), ("yesterday", "Yesterday"),
    ("this_week", "This week (Monday to Sunday)"), ("last_week", "Last week (Monday to Sunday)"),
    ("this_month", "This month"), ("last_month", "Last month"),
    ("since_last_run", "Everything since the last run"),
)
DEFAULT_TIME = "08:00"
_TIME = re.compile(r"(?:[01]\d|2[0-3]):[0-5]\d")


class ScheduleAnswers(TypedDict):
    """`state["schedule"]` as typed, with its defaults (answers_of)."""

    how: str
    time: str
    days: list[str]
    day: str
    words: str
    period: str
    command: str


class SpecSchedule(TypedDict):
    """The spec's `schedule` (docs/engine.md, "Spec format")."""

    words: str
    when: str | None  # None: only in the requester's own words (schedule.when_words)
    command: str
    period: str | None


def answers_of(state: Mapping[str, Any]) -> ScheduleAnswers:
    stored = state.get("schedule") or {}
    how = str(stored.get("how") or "click")
    return {"how": how if how in dict(HOW) else "click",
            "time": str(stored.get("time") or DEFAULT_TIME),
            "days": [day for day in stored.get("days", []) if day in dict(DAYS)],
            "day": str(stored.get("day") or "1"), "words": str(stored.get("words", "")),
            "period": str(stored.get("period") or ""), "command": str(stored.get("command", ""))}


def day_field(day: str) -> str:
    """Each day's checkbox has a name of its own (the page's answers arrive one value a name)."""
    return f"{FIELD_DAYS}-{day}"


def apply_form(state: dict[str, Any], data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Store the posted section as typed (in place) and return its problems by field."""
    state["schedule"] = {
        "how": str(data.get(FIELD_HOW, "click")), "time": str(data.get(FIELD_TIME, "")).strip(),
        "days": [day for day, _ in DAYS if data.get(day_field(day))],
        "day": str(data.get(FIELD_DAY, "1")), "words": str(data.get(FIELD_WORDS, "")),
        "period": str(data.get(FIELD_PERIOD, "")), "command": str(data.get(FIELD_COMMAND, ""))}
    return schedule_errors(state)


def schedule_errors(state: Mapping[str, Any]) -> dict[str, list[str]]:
    given = answers_of(state)
    errors: dict[str, list[str]] = {}
    if len(given["words"]) > MAX_WORDS_CHARS:
        errors[FIELD_WORDS] = [f"Please shorten this to at most {MAX_WORDS_CHARS} characters."]
    if given["how"] == "click":
        return errors
    if given["how"] == "words":
        if not given["words"].strip():
            errors[FIELD_WORDS] = ["Say in your own words when it should run, e.g. "
                                   "\u201con the first Monday of each month\u201d."]
        return errors
    if not _TIME.fullmatch(given["time"]):
        errors[FIELD_TIME] = ["Give a time like 08:00 (24-hour clock)."]
    if given["how"] == "weekly" and not given["days"]:
        errors[FIELD_DAYS] = ["Choose at least one day of the week."]
    if given["how"] == "monthly" and given["day"] not in dict(MONTH_DAYS):
        errors[FIELD_DAY] = ["Choose a day of the month."]
    if given["period"] not in dict(PERIODS):
        errors[FIELD_PERIOD] = ["Choose one of the periods."]
    return errors


def when_words(state: Mapping[str, Any]) -> str | None:
    """The `when` words of the answer (None: only in the requester's own words, or never)."""
    given = answers_of(state)
    how, time = given["how"], given["time"]
    if how == "daily":
        return f"daily {time}"
    if how == "weekly":
        order = [day for day, _ in DAYS]
        return f"weekly {','.join(sorted(set(given['days']), key=order.index))} {time}"
    if how == "monthly":
        return f"monthly {given['day']} {time}"
    return None


def described(state: Mapping[str, Any]) -> str:
    """The rhythm in plain words: "every week on Monday at 08:00"."""
    given = answers_of(state)
    how, time = given["how"], given["time"]
    if how == "daily":
        return f"every day at {time}"
    if how == "weekly":
        names = [label for day, label in DAYS if day in given["days"]]
        return f"every week on {' and '.join(names) or '(no day yet)'} at {time}"
    if how == "monthly":
        return f"every month on {dict(MONTH_DAYS).get(given['day'], given['day'])} at {time}"
    if how == "words":
        return " ".join(given["words"].split())
    return "only when someone clicks (or calls it)"


def spec_schedule(state: Mapping[str, Any], commands: list[str]) -> SpecSchedule | None:
    """The spec's `schedule` (None: it runs only when someone calls it)."""
    given = answers_of(state)
    if given["how"] == "click":
        return None
    command = given["command"] if given["command"] in commands else (commands or [""])[0]
    words = " ".join(given["words"].split()) or described(state)
    return {"words": words, "when": when_words(state), "command": command,
            "period": given["period"] or None}


def schedule_line(state: Mapping[str, Any], commands: list[str]) -> str:
    """A rule for the builder: when it runs, and the period input of each run ("" for none)."""
    schedule = spec_schedule(state, commands)
    if schedule is None:
        return ""
    line = f"The task {schedule['command']} also runs by itself: {described(state)}."
    period = schedule["period"]
    if period == "since_last_run":
        line += (" Each run covers everything since the last successful run: its input has"
                 " since, the ISO date-time that run started.")
    elif period:
        label = dict(PERIODS)[period]
        words = label[:1].lower() + label[1:]
        line += (f" Each run covers {words}: its input has start and end, the first and last"
                 " day of that period as ISO dates (2025-03-03).")
    return line


def summary_lines(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    given = answers_of(state)
    words = " ".join(given["words"].split())
    said = f" (\u201c{words}\u201d)" if words and given["how"] not in ("click", "words") else ""
    lines = [("Runs", described(state) + said)]
    if given["how"] != "click":
        lines.append(("Each run covers", dict(PERIODS).get(given["period"], "")))
    return lines


def form_view(state: Mapping[str, Any], errors: Mapping[str, list[str]],
              commands: list[tuple[str, str]]) -> dict[str, object]:
    """The section's values and errors; `commands` (key, name) for the task it runs."""
    given = answers_of(state)
    days = [{"value": day, "label": label, "field": day_field(day),
             "checked": day in given["days"]} for day, label in DAYS]
    return {**given, "how_choices": HOW, "day_choices": days, "month_days": MONTH_DAYS,
            "periods": PERIODS, "commands": commands,
            "errors": {key.removeprefix("sch-"): errors.get(key, []) for key in (
                FIELD_HOW, FIELD_TIME, FIELD_DAYS, FIELD_DAY, FIELD_WORDS, FIELD_PERIOD)}}
