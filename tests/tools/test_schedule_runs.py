"""The runs of schedules (tools/services/schedule_runs.py): a weekly schedule sends last week's
dates, missed runs run once, late, and say so; a run that cannot start says why and tells its
owner; the tool's page shows the next run with its period and the recent runs with results.
The plugin runs for real in the sandbox."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from teams.models import Notification
from tests.tools.conftest import client_for
from tools.models import Activation, Invocation, Schedule
from tools.services.activations import activation_retire
from tools.services.blocks import version_block, version_unblock
from tools.services.invocations import invocation_perform
from tools.services.schedule_runs import schedules_due_run, schedules_due_send
from tools.services.schedules import schedule_create

pytestmark = pytest.mark.django_db
BERLIN = ZoneInfo("Europe/Berlin")
WEEK = {"start": "{{last_week.start}}", "end": "{{last_week.end}}"}


def weekly(active: Activation, world: dict[str, Any], *, since: datetime,
           command: str = "count", payload: dict[str, Any] | None = None) -> Schedule:
    return schedule_create(activation=active, user=world["reviewer"], name="Monday report",
                           command=command, payload=WEEK if payload is None else payload,
                           when="weekly mon 08:00", time_zone="Europe/Berlin", now=since)


def page_text(user: Any) -> str:
    response = client_for(user).get(reverse("tools:detail", args=["acme", "month-totals"]))
    assert response.status_code == 200
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def test_the_monday_after_the_spring_change_sends_last_weeks_dates(
        active: Activation, world: dict[str, Any]) -> None:
    schedule = weekly(active, world, since=datetime(2027, 3, 24, 12, 0, tzinfo=BERLIN))
    assert schedule.next_run_at == datetime(2027, 3, 29, 6, 0, tzinfo=UTC)
    page = page_text(world["requester"])
    assert ("Monday report : count every Monday at 08:00 (Europe/Berlin)" in page)
    assert "Next: Monday 29 March 2027 08:00 CEST, period 22–28 March 2027" in page
    assert '"start": "2027-03-22"' in page  # what the next run will send
    assert "Then: Monday 5 April 2027 08:00 CEST; Monday 12 April 2027" in page

    assert schedules_due_send(now=datetime(2027, 3, 29, 7, 59, tzinfo=BERLIN)) == []
    [run] = schedules_due_run(now=datetime(2027, 3, 29, 8, 0, tzinfo=BERLIN))
    assert run.started and run.missed == 0 and run.note == ""  # on time: nothing to say
    queued = run.invocation
    assert queued is not None and queued.payload == {"start": "2027-03-22",
                                                     "end": "2027-03-28"}
    assert queued.scheduled_for == datetime(2027, 3, 29, 6, 0, tzinfo=UTC)
    schedule.refresh_from_db()
    assert schedule.next_run_at == datetime(2027, 4, 5, 6, 0, tzinfo=UTC)
    assert schedule.payload == WEEK  # the placeholders stay for the next run
    done = invocation_perform(invocation_id=queued.pk)
    assert done is not None and done.status == "ok", done and done.error
    page = page_text(world["requester"])
    assert "Its latest runs Monday 29 March 2027 08:00 CEST succeeded Succeeded in" in page
    assert "Next: Monday 5 April 2027 08:00 CEST, period 29 March – 4 April 2027" in page


def test_missed_runs_run_once_late_and_say_so(active: Activation,
                                              world: dict[str, Any]) -> None:
    schedule = weekly(active, world, since=datetime(2027, 2, 28, 12, 0, tzinfo=BERLIN))
    assert schedule.next_run_at == datetime(2027, 3, 1, 7, 0, tzinfo=UTC)
    # The portal was stopped from Sunday 28 February to Wednesday 31 March, 10:00.
    back = datetime(2027, 3, 31, 10, 0, tzinfo=BERLIN)
    [run] = schedules_due_run(now=back)
    assert schedules_due_run(now=back) == []  # once, not once per missed Monday
    assert run.started and run.missed == 4
    assert run.scheduled_for == datetime(2027, 3, 29, 6, 0, tzinfo=UTC)  # the latest Monday
    assert run.note == (
        "Caught up: the portal was not running, so 4 earlier runs from Monday 1 March 2027 "
        "08:00 CET did not happen; this one run stands for them and for Monday 29 March 2027 "
        "08:00 CEST. Ran late: due Monday 29 March 2027 08:00 CEST, started Wednesday 31 March "
        "2027 10:00 CEST.")
    assert run.invocation is not None and run.invocation.payload == {
        "start": "2027-03-22", "end": "2027-03-28"}  # the latest Monday's period
    assert Invocation.objects.filter(schedule=schedule).count() == 1
    schedule.refresh_from_db()
    assert schedule.next_run_at == datetime(2027, 4, 5, 6, 0, tzinfo=UTC)  # its rhythm again
    invocation_perform(invocation_id=run.invocation.pk)
    page = page_text(world["admin"])
    assert "Caught up: the portal was not running, so 4 earlier runs" in page

    # Down for two hours on a Monday morning: late, nothing missed.
    [late] = schedules_due_run(now=datetime(2027, 4, 5, 10, 0, tzinfo=BERLIN))
    assert late.missed == 0 and late.note == (
        "Ran late: due Monday 5 April 2027 08:00 CEST, started Monday 5 April 2027 10:00 CEST.")


def test_last_success_is_when_the_last_good_run_was_due(active: Activation,
                                                        world: dict[str, Any]) -> None:
    schedule = weekly(active, world, since=datetime(2027, 3, 24, 12, 0, tzinfo=BERLIN),
                      payload={"since": "{{last_success}}"})
    [first] = schedules_due_run(now=datetime(2027, 3, 29, 8, 0, tzinfo=BERLIN))
    assert first.invocation is not None
    created = schedule.created_at.astimezone(BERLIN).isoformat(timespec="seconds")
    assert first.invocation.payload == {"since": created}  # before the first: its creation
    invocation_perform(invocation_id=first.invocation.pk)
    [second] = schedules_due_run(now=datetime(2027, 4, 5, 8, 0, tzinfo=BERLIN))
    assert second.invocation is not None
    assert second.invocation.payload == {"since": "2027-03-29T08:00:00+02:00"}


@pytest.mark.django_db(transaction=True)
def test_a_run_that_cannot_start_says_why_and_tells_its_owner_once(
        active: Activation, world: dict[str, Any]) -> None:
    schedule = weekly(active, world, since=datetime(2027, 3, 24, 12, 0, tzinfo=BERLIN))
    version_block(version=active.version, user=world["staff"], reason="it sends data away")
    [run] = schedules_due_run(now=datetime(2027, 3, 29, 8, 0, tzinfo=BERLIN))
    assert not run.started
    entry = Invocation.objects.get(schedule=schedule)
    assert (entry.status, entry.error_kind) == ("refused", "not_started")
    assert "A site administrator disabled this version of the plugin everywhere" in entry.error
    notes = Notification.objects.filter(user=world["reviewer"], message__contains="Monday report")
    assert [n.message for n in notes] == [
        "Your schedule “Monday report” of month-totals could not start: A site administrator "
        "disabled this version of the plugin everywhere; it cannot be used. Your team's admins "
        "have been told."]
    page = page_text(world["requester"])
    assert ("Monday 29 March 2027 08:00 CEST could not start Could not start: A site "
            "administrator disabled this version") in page
    # Still disabled a week later: recorded again, not told again.
    schedules_due_run(now=datetime(2027, 4, 5, 8, 0, tzinfo=BERLIN))
    assert Invocation.objects.filter(schedule=schedule, status="refused").count() == 2
    assert notes.count() == 1
    # Enabled again: the next run works and the schedule is no longer failing.
    version_unblock(version=active.version, user=world["staff"])
    [ok] = schedules_due_run(now=datetime(2027, 4, 12, 8, 0, tzinfo=BERLIN))
    assert ok.started and ok.invocation is not None
    assert invocation_perform(invocation_id=ok.invocation.pk).status == "ok"
    schedule.refresh_from_db()
    assert not schedule.failing


@pytest.mark.django_db(transaction=True)
def test_a_tool_no_longer_in_use_says_so_once_and_waits(active: Activation,
                                                        world: dict[str, Any]) -> None:
    schedule = weekly(active, world, since=datetime(2027, 3, 24, 12, 0, tzinfo=BERLIN))
    activation_retire(team=world["acme"], plugin=active.plugin, user=world["admin"])
    [run] = schedules_due_run(now=datetime(2027, 3, 29, 8, 0, tzinfo=BERLIN))
    assert not run.started
    assert "month-totals is no longer in use by Acme, so the schedule did not start" in run.reason
    entry = Invocation.objects.get(schedule=schedule)
    assert entry.status == "refused" and entry.error == run.reason
    assert Notification.objects.filter(user=world["reviewer"],
                                       message__contains="could not start").count() == 1
    [quiet] = schedules_due_run(now=datetime(2027, 4, 5, 8, 0, tzinfo=BERLIN))
    assert quiet.invocation is None  # said once; it waits, quietly
    assert Invocation.objects.filter(schedule=schedule).count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_version_disabled_after_the_run_was_queued_could_not_start_either(
        active: Activation, world: dict[str, Any]) -> None:
    weekly(active, world, since=datetime(2027, 3, 24, 12, 0, tzinfo=BERLIN))
    [run] = schedules_due_run(now=datetime(2027, 3, 29, 8, 0, tzinfo=BERLIN))
    assert run.started and run.invocation is not None
    version_block(version=active.version, user=world["staff"], reason="it sends data away")
    refused = invocation_perform(invocation_id=run.invocation.pk)
    assert refused is not None and refused.status == "refused"
    [note] = Notification.objects.filter(user=world["reviewer"])
    assert note.message.startswith("Your schedule “Monday report” of month-totals could not "
                                   "start: A site administrator disabled this version")
