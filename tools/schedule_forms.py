"""The schedule form of a tool's page, in plain words: how often, which days, what time, the
time zone, and the input (JSON, with a period picker that inserts placeholders). It only
builds the `when` words (tools/services/calendar.py) from the choices, so the page, the
interview's spec and `manage.py tool_schedule` share one grammar; the service saves them.
"""

from __future__ import annotations

from typing import Any

from django import forms

from tools.json_input import JsonInputError, json_input_parse
from tools.services.calendar import (
    DAY_NAMES,
    DAYS,
    ORDINALS,
    TIME,
    RuleError,
    ScheduleRule,
    cron_rule_parse,
    schedule_rule_parse,
    time_zones,
)
from tools.services.periods import PeriodError, placeholders_check

HOW_OFTEN = (
    ("minutes", "Every few minutes"),
    ("hours", "Every few hours"),
    ("daily", "Every day"),
    ("weekly", "Every week, on the days you choose"),
    ("monthly", "Every month, on the day you choose"),
    ("cron", "Advanced: a cron expression"),
)


def _month_days() -> list[tuple[str, Any]]:
    dates = [(str(day), f"the {day}{_suffix(day)}") for day in range(1, 32)]
    weekdays = [(f"{word}-{DAYS[n]}", f"the {word} {DAY_NAMES[n]}")
                for word in ORDINALS for n in range(7)]
    return [("A date", [("last", "the last day"), *dates]), ("A weekday", weekdays)]


def _suffix(day: int) -> str:
    return "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


class ScheduleForm(forms.Form):
    """After `is_valid()`: `when`, `cron`, `time_zone` and `payload` for schedule_create."""

    name = forms.CharField(label="Name", max_length=80, required=False,
                           help_text="So the team knows it, like “Monday report”.")
    command = forms.ChoiceField(label="Command")
    every = forms.ChoiceField(label="How often", choices=HOW_OFTEN, initial="weekly")
    interval = forms.IntegerField(label="Every how many", required=False, min_value=1,
                                  initial=1, widget=forms.NumberInput(attrs={"inputmode":
                                                                             "numeric"}),
                                  help_text="Minutes: 5 to 1440. Hours: 1 to 24.")
    days = forms.MultipleChoiceField(
        label="Which days", required=False, widget=forms.CheckboxSelectMultiple,
        choices=[(key, name) for key, name in zip(DAYS, DAY_NAMES, strict=True)])
    month_day = forms.ChoiceField(label="Which day of the month", required=False,
                                  choices=_month_days, initial="1")
    at_time = forms.CharField(label="At what time", required=False, initial="08:00",
                              widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
                              help_text="On the clock of the time zone below, like 08:00.")
    time_zone = forms.ChoiceField(label="Time zone", choices=(), required=False,
                                  help_text="It starts with the team's: the one its latest "
                                            "schedule uses.")
    cron = forms.CharField(label="Cron expression", required=False, max_length=120,
                           help_text="Five fields: minute, hour, day of the month, month, day "
                                     "of the week. “0 8 * * 1” is Mondays at 08:00.")
    payload = forms.CharField(label="Input (JSON)", required=False, strip=False,
                              widget=forms.Textarea(attrs={"rows": 4}),
                              help_text='A JSON object, like {"text": "hi"}; it may hold '
                                        "periods (below), which each run fills in.")

    def __init__(self, *args: Any, commands: list[str], **kwargs: Any) -> None:
        # The fields' names are the page's since schedules began (name, command, payload,
        # every, interval, at_time); their ids start with "schedule-" on a page of many forms.
        kwargs.setdefault("auto_id", "schedule-%s")
        super().__init__(*args, **kwargs)
        for key, choices in (("command", commands), ("time_zone", time_zones())):
            field = self.fields[key]
            assert isinstance(field, forms.ChoiceField)
            field.choices = [(name, name) for name in choices]
        self.when = ""
        self.payload_value: dict[str, object] = {}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        every = cleaned.get("every") or ""
        at = (cleaned.get("at_time") or "").strip()
        try:
            if every in ("daily", "weekly", "monthly") and not TIME.fullmatch(at):
                self.add_error("at_time", "Write the time of day as HH:MM, like 08:00.")
            elif every == "cron":
                self.when, cleaned["cron"] = "", cron_rule_parse(cleaned.get("cron") or "").cron
            elif every:
                cleaned["cron"] = ""
                self.when = schedule_rule_parse(self._words(every, cleaned)).text
        except RuleError as exc:
            self.add_error(_field_of(every), str(exc))
        self._payload(cleaned.get("payload") or "")
        return cleaned

    @staticmethod
    def _words(every: str, cleaned: dict[str, Any]) -> str:
        at = (cleaned.get("at_time") or "").strip()
        if every in ("minutes", "hours"):
            return f"every {cleaned.get('interval') or 1} {every}"
        if every == "daily":
            return f"daily {at}"
        if every == "weekly":
            if not cleaned.get("days"):
                raise RuleError("Choose at least one day of the week.")
            return f"weekly {','.join(cleaned['days'])} {at}"
        return f"monthly {cleaned.get('month_day') or ''} {at}"

    def _payload(self, text: str) -> None:
        if not text.strip():
            return
        try:
            value = json_input_parse(text)
        except JsonInputError as exc:
            self.add_error("payload", str(exc))
            return
        if not isinstance(value, dict):
            self.add_error("payload", 'The input must be a JSON object, like {"text": "hi"}.')
            return
        try:
            placeholders_check(value)
        except PeriodError as exc:
            self.add_error("payload", str(exc))
            return
        self.payload_value = value


def _field_of(every: str) -> str:
    return {"minutes": "interval", "hours": "interval", "weekly": "days",
            "monthly": "month_day", "cron": "cron"}.get(every, "at_time")


def initial_for(rule: ScheduleRule | None) -> dict[str, object]:
    """The form's fields for a rule (an offered schedule starts with them)."""
    if rule is None:
        return {}
    found: dict[str, object] = {"every": rule.kind}
    if rule.at is not None:
        found["at_time"] = f"{rule.at:%H:%M}"
    if rule.kind in ("minutes", "hours"):
        found["interval"] = rule.interval
    if rule.kind == "weekly":
        found["days"] = [DAYS[d] for d in rule.days]
    if rule.kind == "monthly":
        found["month_day"] = rule.text.split(" ")[1]
    if rule.kind == "cron":
        found["cron"] = rule.cron
    return found
