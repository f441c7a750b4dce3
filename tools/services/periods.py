"""Period placeholders in a schedule's input (docs/tools.md, "Periods"): `{{last_week.start}}`
in a string of the input becomes 2027-03-22 when the run is due on Monday 29 March 2027, in the
schedule's time zone. Weeks run Monday to Sunday; dates are ISO (YYYY-MM-DD);
`{{last_success}}` is an ISO date-time (the moment the last successful run was due; before the
first, the moment the schedule was set up).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from dateutil.relativedelta import MO, SU, relativedelta

from tools.services.calendar import MONTH_NAMES, moment_words

PERIODS = ("today", "yesterday", "this_week", "last_week", "this_month", "last_month")
PLACEHOLDERS = ("today", "yesterday", "this_week.start", "this_week.end", "last_week.start",
                "last_week.end", "this_month.start", "this_month.end", "last_month.start",
                "last_month.end", "last_success")
PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
# What the form's period picker offers, in plain words.
PICKER = (
    ("today", "Today"), ("yesterday", "Yesterday"),
    ("this_week.start", "This week: Monday"), ("this_week.end", "This week: Sunday"),
    ("last_week.start", "Last week: Monday"), ("last_week.end", "Last week: Sunday"),
    ("this_month.start", "This month: the first day"),
    ("this_month.end", "This month: the last day"),
    ("last_month.start", "Last month: the first day"),
    ("last_month.end", "Last month: the last day"),
    ("last_success", "When the last successful run started"),
)


class PeriodError(ValueError):
    """An input whose placeholders the schedule cannot fill; `str()` says which."""


def placeholders_in(value: Any) -> list[str]:
    """The placeholder names the strings of `value` hold (in order, each once)."""
    found: dict[str, None] = {}
    for text in _strings(value):
        for match in PLACEHOLDER.finditer(text):
            found[match.group(1).strip()] = None
    return list(found)


def placeholders_check(value: Any) -> None:
    """PeriodError unless every placeholder of `value` is one the schedule fills."""
    unknown = [name for name in placeholders_in(value) if name not in PLACEHOLDERS]
    if unknown:
        shown = ", ".join("{{" + name + "}}" for name in unknown)
        raise PeriodError(f"The input uses {shown}, which is not a period the schedule knows. "
                          "The periods: " + ", ".join("{{" + n + "}}" for n in PLACEHOLDERS)
                          + ".")
    for text in _strings(value):
        rest = PLACEHOLDER.sub("", text)
        if "{{" in rest or "}}" in rest:
            raise PeriodError(f"“{text[:60]}” has a {{{{ or }}}} that does not close a "
                              "period; write a period as {{last_week.start}}.")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


@dataclass(frozen=True)
class Periods:
    """The periods of a run due at `moment`, in `zone`."""

    moment: datetime
    zone: ZoneInfo
    last_success: datetime

    @property
    def day(self) -> date:
        return self.moment.astimezone(self.zone).date()

    def span(self, period: str) -> tuple[date, date]:
        day = self.day
        if period == "today":
            return day, day
        if period == "yesterday":
            return day - timedelta(days=1), day - timedelta(days=1)
        if period.endswith("_week"):
            monday = day + relativedelta(weekday=MO(-1))
            if period == "last_week":
                monday -= timedelta(weeks=1)
            return monday, monday + relativedelta(weekday=SU(+1))
        first = day.replace(day=1)
        if period == "last_month":
            first -= relativedelta(months=1)
        return first, first + relativedelta(months=1, days=-1)

    def values(self) -> dict[str, str]:
        found = {"today": self.day.isoformat(), "yesterday": self.span("yesterday")[0].isoformat(),
                 "last_success": self.last_success.astimezone(self.zone).isoformat(
                     timespec="seconds")}
        for period in PERIODS[2:]:
            start, end = self.span(period)
            found[f"{period}.start"], found[f"{period}.end"] = start.isoformat(), end.isoformat()
        return found


def payload_fill(value: Any, periods: Periods) -> Any:
    """`value` with every placeholder in its strings replaced by its value for this run."""
    values = periods.values()
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda match: values.get(match.group(1).strip(), match.group(0)),
                               value)
    if isinstance(value, dict):
        return {key: payload_fill(item, periods) for key, item in value.items()}
    if isinstance(value, list):
        return [payload_fill(item, periods) for item in value]
    return value


def period_words(value: Any, periods: Periods) -> str:
    """What the placeholders of `value` stand for at this run, in words ("period 22–28 March
    2027"), or "" when it holds none."""
    used = placeholders_in(value)
    said: list[str] = []
    for period in PERIODS:
        if any(name == period or name.startswith(period + ".") for name in used):
            said.append("period " + _span_words(*periods.span(period)))
    if "last_success" in used:
        said.append("since " + moment_words(periods.last_success, periods.zone))
    return ", ".join(dict.fromkeys(said))


def _span_words(start: date, end: date) -> str:
    def month(day: date) -> str:
        return MONTH_NAMES[day.month - 1]

    if start == end:
        return f"{start.day} {month(start)} {start.year}"
    if (start.year, start.month) == (end.year, end.month):
        return f"{start.day}–{end.day} {month(end)} {end.year}"
    if start.year == end.year:
        return f"{start.day} {month(start)} – {end.day} {month(end)} {end.year}"
    return f"{start.day} {month(start)} {start.year} – {end.day} {month(end)} {end.year}"
