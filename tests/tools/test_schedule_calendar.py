"""The calendar of schedules (tools/services/calendar.py): the `when` words, daylight-saving
changes both ways (Europe/Berlin, 2027-03-28 and 2027-10-31, with a time that does not exist and
one that happens twice), the last day of February in leap and other years, the first Monday, a
cron expression, and the look back the catch-up rule uses."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from tools.services.calendar import (
    RuleError,
    cron_rule_parse,
    latest_run,
    moment_words,
    next_run,
    next_runs,
    rule_words,
    runs_between,
    schedule_rule_parse,
    time_zone_get,
)

BERLIN = ZoneInfo("Europe/Berlin")


def berlin(*args: int) -> datetime:
    return datetime(*args, tzinfo=BERLIN)


def local(moments: list[datetime]) -> list[str]:
    return [m.astimezone(BERLIN).strftime("%Y-%m-%d %H:%M %Z") for m in moments]


@pytest.mark.parametrize(("words", "text", "said"), [
    ("every 15 minutes", "every 15 minutes", "every 15 minutes"),
    ("Every  2 hours", "every 2 hours", "every 2 hours"),
    ("every hour", "every 1 hour", "every hour"),
    ("daily 7:30", "daily 07:30", "every day at 07:30"),
    ("weekly mon 08:00", "weekly mon 08:00", "every Monday at 08:00"),
    ("weekly thu, mon 08:00", "weekly mon,thu 08:00", "every Monday and Thursday at 08:00"),
    ("weekly mon-fri 18:15", "weekly mon,tue,wed,thu,fri 18:15",
     "every Monday, Tuesday, Wednesday, Thursday and Friday at 18:15"),
    ("monthly 1 08:00", "monthly 1 08:00", "on the 1st of every month at 08:00"),
    ("monthly last 08:00", "monthly last 08:00", "on the last day of every month at 08:00"),
    ("monthly first-mon 08:00", "monthly first-mon 08:00",
     "on the first Monday of every month at 08:00"),
    ("monthly last-fri 17:00", "monthly last-fri 17:00",
     "on the last Friday of every month at 17:00"),
])
def test_the_when_words_read_and_say_back(words: str, text: str, said: str) -> None:
    rule = schedule_rule_parse(words)
    assert rule.text == text and rule_words(rule) == said
    assert schedule_rule_parse(rule.text) == rule  # the stored words read the same


@pytest.mark.parametrize(("words", "why"), [
    ("every 3 minutes", "Every 5 to 1440 minutes."),
    ("every 25 hours", "Every 1 to 24 hours."),
    ("every week", "write every N minutes or every N hours"),
    ("daily", "end with the time of day as HH:MM"),
    ("daily 8am", "end with the time of day as HH:MM"),
    ("weekly 08:00", "say which days and a time, like weekly mon 08:00"),
    ("weekly mon 24:00", "end with the time of day as HH:MM"),
    ("weekly fri-mon 08:00", "a range of days goes forward"),
    ("weekly funday 08:00", "is not a day"),
    ("monthly 32 08:00", "A day of the month is 1 to 31"),
    ("monthly fifth-mon 08:00", "like first-mon, second-tue, last-fri"),
    ("hourly", "is not a rhythm the schedule knows. Write one of: every 15 minutes"),
])
def test_words_that_say_no_rhythm_are_refused_in_plain_words(words: str, why: str) -> None:
    with pytest.raises(RuleError, match=why.replace(".", r"\.").replace("(", r"\(")):
        schedule_rule_parse(words)


def test_a_daily_time_keeps_the_clock_across_both_changes() -> None:
    rule = schedule_rule_parse("daily 08:00")
    spring = next_runs(rule, BERLIN, berlin(2027, 3, 26, 12, 0), 3)
    assert local(spring) == ["2027-03-27 08:00 CET", "2027-03-28 08:00 CEST",
                             "2027-03-29 08:00 CEST"]
    assert spring[1] - spring[0] == timedelta(hours=23)  # the short day
    autumn = next_runs(rule, BERLIN, berlin(2027, 10, 29, 12, 0), 3)
    assert local(autumn) == ["2027-10-30 08:00 CEST", "2027-10-31 08:00 CET",
                             "2027-11-01 08:00 CET"]
    assert autumn[1] - autumn[0] == timedelta(hours=25)  # the long day


def test_a_time_that_does_not_exist_runs_an_hour_later_and_one_that_happens_twice_once() -> None:
    rule = schedule_rule_parse("daily 02:30")
    # 2027-03-28: clocks go from 02:00 CET to 03:00 CEST; 02:30 does not exist.
    spring = next_runs(rule, BERLIN, berlin(2027, 3, 27, 12, 0), 2)
    assert local(spring) == ["2027-03-28 03:30 CEST", "2027-03-29 02:30 CEST"]
    # 2027-10-31: clocks go from 03:00 CEST back to 02:00 CET; 02:30 happens twice: once.
    autumn = next_runs(rule, BERLIN, berlin(2027, 10, 30, 12, 0), 2)
    assert local(autumn) == ["2027-10-31 02:30 CEST", "2027-11-01 02:30 CET"]
    # Asked at the second 02:15 of that night, the next run is the next day's (not the first
    # 02:30, which has passed already though its clock time comes later).
    second_pass = datetime(2027, 10, 31, 1, 15, tzinfo=UTC)  # 02:15 CET
    assert local([next_run(rule, BERLIN, second_pass)]) == ["2027-11-01 02:30 CET"]


def test_every_few_hours_counts_elapsed_time_across_the_changes() -> None:
    rule = schedule_rule_parse("every 2 hours")
    spring = next_runs(rule, BERLIN, berlin(2027, 3, 28, 0, 30), 3)
    assert [b - a for a, b in zip(spring, spring[1:], strict=False)] == [timedelta(hours=2)] * 2
    assert local(spring) == ["2027-03-28 01:00 CET", "2027-03-28 04:00 CEST",
                             "2027-03-28 06:00 CEST"]
    autumn = next_runs(rule, BERLIN, berlin(2027, 10, 31, 0, 30), 3)
    assert [b - a for a, b in zip(autumn, autumn[1:], strict=False)] == [timedelta(hours=2)] * 2
    quarter = next_runs(schedule_rule_parse("every 15 minutes"), BERLIN,
                        berlin(2027, 3, 1, 9, 7), 2)
    assert local(quarter) == ["2027-03-01 09:15 CET", "2027-03-01 09:30 CET"]


def test_the_last_day_of_february_in_leap_and_other_years() -> None:
    rule = schedule_rule_parse("monthly last 08:00")
    assert local(next_runs(rule, BERLIN, berlin(2028, 2, 1), 2)) == [
        "2028-02-29 08:00 CET", "2028-03-31 08:00 CEST"]
    assert local(next_runs(rule, BERLIN, berlin(2027, 2, 1), 2)) == [
        "2027-02-28 08:00 CET", "2027-03-31 08:00 CEST"]
    assert local(next_runs(rule, BERLIN, berlin(2100, 2, 1), 1)) == ["2100-02-28 08:00 CET"]
    # The 31st: months without one are skipped (and the page says so).
    day31 = schedule_rule_parse("monthly 31 08:00")
    assert local(next_runs(day31, BERLIN, berlin(2027, 1, 31, 9), 2)) == [
        "2027-03-31 08:00 CEST", "2027-05-31 08:00 CEST"]
    assert "months without one are skipped" in rule_words(day31)


def test_the_first_monday_and_the_last_friday() -> None:
    first = schedule_rule_parse("monthly first-mon 08:00")
    assert local(next_runs(first, BERLIN, berlin(2027, 1, 15), 4)) == [
        "2027-02-01 08:00 CET", "2027-03-01 08:00 CET", "2027-04-05 08:00 CEST",
        "2027-05-03 08:00 CEST"]
    last = schedule_rule_parse("monthly last-fri 17:00")
    assert local(next_runs(last, BERLIN, berlin(2027, 2, 1), 2)) == [
        "2027-02-26 17:00 CET", "2027-03-26 17:00 CET"]


def test_weekly_on_chosen_days() -> None:
    rule = schedule_rule_parse("weekly mon,thu 08:00")
    assert local(next_runs(rule, BERLIN, berlin(2027, 3, 26, 12), 3)) == [
        "2027-03-29 08:00 CEST", "2027-04-01 08:00 CEST", "2027-04-05 08:00 CEST"]


def test_a_cron_expression_in_a_time_zone() -> None:
    rule = cron_rule_parse("0 8 * * 1")
    assert rule.text == "0 8 * * 1"
    assert rule_words(rule) == "when the cron expression 0 8 * * 1 says (at 08:00 on Monday)"
    assert local(next_runs(rule, BERLIN, berlin(2027, 3, 26, 12), 2)) == [
        "2027-03-29 08:00 CEST", "2027-04-05 08:00 CEST"]
    # cronsim follows Debian's cron: a job in the hour that does not exist runs as it ends.
    night = cron_rule_parse("30 2 * * *")
    assert local(next_runs(night, BERLIN, berlin(2027, 3, 27, 12), 2)) == [
        "2027-03-28 03:00 CEST", "2027-03-29 02:30 CEST"]
    assert local(next_runs(night, BERLIN, berlin(2027, 10, 30, 12), 2)) == [
        "2027-10-31 02:30 CEST", "2027-11-01 02:30 CET"]
    for bad, why in (("0 8 * *", "has five fields"), ("61 * * * *", "bad minute"),
                     ("0 8 * * 1 2027", "has five fields")):
        with pytest.raises(RuleError, match=why):
            cron_rule_parse(bad)


def test_time_zones_are_iana_names() -> None:
    assert time_zone_get("Europe/Berlin") == BERLIN
    assert time_zone_get("UTC").key == "UTC"
    with pytest.raises(RuleError, match="not a time zone; write one like Europe/Berlin"):
        time_zone_get("CET+1")


def test_the_look_back_of_the_catch_up_rule() -> None:
    monday = schedule_rule_parse("weekly mon 08:00")
    # Down from Monday 1 March to Wednesday 31 March 2027: the latest run time that passed is
    # Monday 29 March, and four others before it were missed.
    back = berlin(2027, 3, 31, 10, 0)
    latest = latest_run(monday, BERLIN, back)
    assert latest is not None and local([latest]) == ["2027-03-29 08:00 CEST"]
    assert latest_run(monday, BERLIN, berlin(2027, 3, 29, 8, 0)) == berlin(2027, 3, 29, 8, 0)
    assert runs_between(monday, BERLIN, berlin(2027, 3, 1, 8, 0), latest) == 4
    assert runs_between(schedule_rule_parse("every 5 minutes"), BERLIN, berlin(2027, 1, 1),
                        berlin(2027, 3, 1), limit=1000) == 1000  # counted up to the limit
    rare = cron_rule_parse("0 0 29 2 *")  # every leap day
    leap_day = latest_run(rare, BERLIN, berlin(2031, 1, 1))
    assert leap_day is not None and local([leap_day]) == ["2028-02-29 00:00 CET"]


def test_a_run_time_in_words() -> None:
    assert moment_words(berlin(2025, 12, 8, 8, 0), BERLIN) == "Monday 8 December 2025 08:00 CET"
    assert moment_words(datetime(2027, 3, 29, 6, 0, tzinfo=UTC), BERLIN) == (
        "Monday 29 March 2027 08:00 CEST")
    assert schedule_rule_parse("daily 08:00").at == time(8, 0)
