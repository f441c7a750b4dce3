"""Period placeholders in a schedule's input (tools/services/periods.py): computed at each run in
the schedule's time zone, Monday to Sunday weeks, month ends, `last_success`, and an unknown
placeholder refused with a plain message."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tools.services.periods import (
    PLACEHOLDERS,
    PeriodError,
    Periods,
    payload_fill,
    period_words,
    placeholders_check,
)

BERLIN = ZoneInfo("Europe/Berlin")
WEEK = {"start": "{{last_week.start}}", "end": "{{ last_week.end }}"}


def test_last_week_on_the_monday_after_the_spring_change() -> None:
    # 2027-03-29 08:00 Europe/Berlin is 06:00 UTC (summer time since the day before).
    monday = Periods(datetime(2027, 3, 29, 8, 0, tzinfo=BERLIN), BERLIN,
                     last_success=datetime(2027, 3, 22, 7, 0, tzinfo=UTC))
    assert payload_fill(WEEK, monday) == {"start": "2027-03-22", "end": "2027-03-28"}
    assert period_words(WEEK, monday) == "period 22–28 March 2027"


def test_the_day_is_the_schedules_not_utcs() -> None:
    # 00:30 in Berlin on 1 March is still 28 February in UTC: the periods are Berlin's.
    moment = datetime(2027, 2, 28, 23, 30, tzinfo=UTC)
    values = Periods(moment, BERLIN, moment).values()
    assert values["today"] == "2027-03-01" and values["yesterday"] == "2027-02-28"
    assert (values["last_month.start"], values["last_month.end"]) == ("2027-02-01",
                                                                      "2027-02-28")
    utc = Periods(moment, ZoneInfo("UTC"), moment).values()
    assert utc["today"] == "2027-02-28"


def test_every_period_on_a_sunday_in_a_leap_year() -> None:
    sunday = Periods(datetime(2028, 3, 5, 18, 0, tzinfo=BERLIN), BERLIN,
                     last_success=datetime(2028, 3, 4, 18, 0, tzinfo=BERLIN))
    assert sunday.values() == {
        "today": "2028-03-05", "yesterday": "2028-03-04",
        "this_week.start": "2028-02-28", "this_week.end": "2028-03-05",
        "last_week.start": "2028-02-21", "last_week.end": "2028-02-27",
        "this_month.start": "2028-03-01", "this_month.end": "2028-03-31",
        "last_month.start": "2028-02-01", "last_month.end": "2028-02-29",
        "last_success": "2028-03-04T18:00:00+01:00"}
    assert set(sunday.values()) == set(PLACEHOLDERS)
    # In a year: the week of New Year spans two years.
    new_year = Periods(datetime(2027, 1, 4, 8, 0, tzinfo=BERLIN), BERLIN,
                       datetime(2027, 1, 4, tzinfo=BERLIN))
    assert period_words(WEEK, new_year) == "period 28 December 2026 – 3 January 2027"
    assert period_words({"d": "{{last_month.start}}"}, new_year) == (
        "period 1–31 December 2026")


def test_placeholders_fill_inside_strings_lists_and_objects() -> None:
    periods = Periods(datetime(2027, 3, 29, 8, 0, tzinfo=BERLIN), BERLIN,
                      last_success=datetime(2027, 3, 22, 8, 0, tzinfo=BERLIN))
    payload = {"title": "Hours {{last_week.start}} to {{last_week.end}}",
               "filters": [{"since": "{{last_success}}"}], "limit": 50, "raw": True}
    assert payload_fill(payload, periods) == {
        "title": "Hours 2027-03-22 to 2027-03-28",
        "filters": [{"since": "2027-03-22T08:00:00+01:00"}], "limit": 50, "raw": True}
    assert period_words(payload, periods) == (
        "period 22–28 March 2027, since Monday 22 March 2027 08:00 CET")
    assert period_words({"text": "no periods"}, periods) == ""


@pytest.mark.parametrize(("payload", "why"), [
    ({"start": "{{last_year.start}}"}, "The input uses {{last_year.start}}, which is not a "
                                       "period the schedule knows. The periods: {{today}}"),
    ({"rows": [{"day": "{{tomorrow}}"}]}, "{{tomorrow}}, which is not a period"),
    ({"start": "{{last_week.start"}, "does not close a period"),
    ({"start": "last_week}}"}, "does not close a period"),
])
def test_an_unknown_or_broken_placeholder_is_refused(payload: dict[str, object],
                                                     why: str) -> None:
    with pytest.raises(PeriodError) as refused:
        placeholders_check(payload)
    assert why in str(refused.value)


def test_every_known_placeholder_passes() -> None:
    placeholders_check({name: "{{" + name + "}}" for name in PLACEHOLDERS})
