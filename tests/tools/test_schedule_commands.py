"""`manage.py tool_schedule` and `manage.py schedules_run_due`, each run as a real command in a
subprocess on the test database: the schedule and its next runs (in words and as JSON), the
refusals that save nothing, and the runs due at `--now` with their outcomes, the plugin running
in the sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings

from tests.live import child_env
from tools.models import Activation, Invocation, Schedule
from tools.services.schedules import schedule_create

pytestmark = [pytest.mark.django_db(transaction=True)]
BERLIN = ZoneInfo("Europe/Berlin")
WEEK = '{"start": "{{last_week.start}}", "end": "{{last_week.end}}"}'


def manage(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=settings.BASE_DIR,
                          env=child_env(), capture_output=True, text=True, timeout=300)


def test_tool_schedule_prints_the_schedule_and_its_next_runs(active: Activation,
                                                             world: dict[str, Any]) -> None:
    done = manage("tool_schedule", "acme", "month-totals", "count", "--when",
                  "weekly mon 08:00", "--tz", "Europe/Berlin", "--input", WEEK, "--as",
                  "acme-reviewer", "--name", "Monday report", "--json")
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    schedule = Schedule.objects.get(pk=said["schedule"])
    assert (schedule.name, schedule.when, schedule.time_zone, schedule.owner) == (
        "Monday report", "weekly mon 08:00", "Europe/Berlin", world["reviewer"])
    assert said["words"] == "every Monday at 08:00 (Europe/Berlin)"
    runs = [datetime.fromisoformat(moment) for moment in said["next_runs"]]
    assert len(runs) == 5 and runs[0] == schedule.next_run_at
    assert all(r.astimezone(BERLIN).strftime("%a %H:%M") == "Mon 08:00" for r in runs)
    assert all(later.astimezone(BERLIN).date() - earlier.astimezone(BERLIN).date()
               == timedelta(days=7) for earlier, later in zip(runs, runs[1:], strict=False))
    first = runs[0].astimezone(BERLIN).date()
    assert said["next_input"] == {"start": str(first - timedelta(days=7)),
                                  "end": str(first - timedelta(days=1))}
    assert said["period"].startswith("period ")

    words = manage("tool_schedule", "acme", "month-totals", "count", "--cron", "0 8 1 * *",
                   "--tz", "Europe/Berlin", "--as", "acme-admin")
    assert words.returncode == 0, words.stderr
    assert "count of month-totals when the cron expression 0 8 1 * * says (at 08:00 on the " \
           "first day of every month) (Europe/Berlin), set up by acme-admin." in words.stdout
    assert words.stdout.count("  then: ") == 4 and "  next: " in words.stdout


@pytest.mark.parametrize(("args", "why"), [
    (["--when", "weekly mon 08:00", "--input", '{"start": "{{last_year.start}}"}'],
     "The input uses {{last_year.start}}, which is not a period the schedule knows."),
    (["--when", "weekly 08:00"], "say which days and a time, like weekly mon 08:00."),
    (["--when", "daily 08:00", "--tz", "Berlin"], "“Berlin” is not a time zone"),
    (["--cron", "0 8 * *"], "a cron expression has five fields"),
    (["--when", "daily 08:00", "--cron", "0 8 * * *"], "give --when or --cron, not both."),
    ([], 'say when it runs: --when "weekly mon 08:00"'),
    (["--when", "daily 08:00", "--input", "[1]"], "--input must be a JSON object"),
])
def test_tool_schedule_refuses_and_saves_nothing(active: Activation, world: dict[str, Any],
                                                 args: list[str], why: str) -> None:
    done = manage("tool_schedule", "acme", "month-totals", "count", "--as", "acme-admin",
                  *args)
    assert done.returncode != 0 and why in done.stderr, done.stderr
    assert not Schedule.objects.exists()


def test_tool_schedule_is_for_reviewers_and_admins(active: Activation,
                                                   world: dict[str, Any]) -> None:
    done = manage("tool_schedule", "acme", "month-totals", "count", "--when", "daily 08:00",
                  "--as", "acme-requester")
    assert done.returncode != 0
    assert "Only reviewers and admins of Acme set up schedules. Nothing was saved." in done.stderr
    assert not Schedule.objects.exists()


def test_schedules_run_due_runs_what_is_due_once_and_says_how_it_ended(
        active: Activation, world: dict[str, Any]) -> None:
    since = datetime(2027, 3, 24, 12, 0, tzinfo=BERLIN)
    report = schedule_create(activation=active, user=world["reviewer"], name="Monday report",
                             command="count", payload=json.loads(WEEK),
                             when="weekly mon 08:00", time_zone="Europe/Berlin", now=since)
    broken = schedule_create(activation=active, user=world["admin"], name="Broken",
                             command="fail", payload={}, when="daily 07:00",
                             time_zone="Europe/Berlin", now=since)
    early = manage("schedules_run_due", "--now", "2027-03-25T06:59:00+01:00", "--json")
    assert early.returncode == 0, early.stderr
    assert json.loads(early.stdout) == {"now": "2027-03-25T06:59:00+01:00", "runs": []}

    done = manage("schedules_run_due", "--now", "2027-03-29T08:00:00+02:00", "--json")
    assert done.returncode == 1, done.stderr  # one of the runs failed
    assert "1 of 2 runs did not succeed." in done.stderr
    runs = {run["name"]: run for run in json.loads(done.stdout)["runs"]}
    ok, failed = runs["Monday report"], runs["Broken"]
    assert (ok["schedule"], ok["outcome"], ok["scheduled_for"], ok["missed"], ok["note"]) == (
        report.pk, "ok", "2027-03-29T06:00:00+00:00", 0, "")
    assert ok["words"].startswith("Succeeded in ")
    call = Invocation.objects.get(pk=ok["invocation"])
    assert call.status == "ok" and call.output == {"n": 1} and call.caller == "schedule"
    # The daily one was due on the 25th and stood still since: it runs once, for the 29th.
    assert (failed["schedule"], failed["outcome"], failed["missed"]) == (broken.pk, "failed", 4)
    assert failed["scheduled_for"] == "2027-03-29T05:00:00+00:00"
    assert "there is nothing to add up" in failed["error"]
    assert failed["note"].startswith("Caught up: the portal was not running, so 4 earlier "
                                     "runs from Thursday 25 March 2027 07:00 CET")

    again = manage("schedules_run_due", "--now", "2027-03-29T08:00:00+02:00")
    assert again.returncode == 0 and "Nothing is due at 2027-03-29T08:00:00+02:00." in \
        again.stdout
    assert Invocation.objects.filter(schedule=report).count() == 1
    report.refresh_from_db()
    assert report.next_run_at == datetime(2027, 4, 5, 6, 0, tzinfo=UTC)

    words = manage("schedules_run_due", "--now", "2027-04-05T08:00:00+02:00")
    assert words.returncode == 1
    assert f"Schedule {report.pk} “Monday report” (month-totals count, for " \
           "2027-04-05T06:00:00+00:00): Succeeded in" in words.stdout


def test_schedules_run_due_wants_a_moment_with_its_offset(world: dict[str, Any]) -> None:
    for moment, why in (("2027-03-29T08:00:00", "say its offset or time zone"),
                        ("next monday", "write a moment in ISO 8601")):
        done = manage("schedules_run_due", "--now", moment)
        assert done.returncode != 0 and why in done.stderr, done.stderr
