"""Schedules: the rules said in plain words, that a due schedule is sent exactly once, and
that a failure tells the owner once (the calendar itself: test_schedule_calendar.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from teams.models import Notification
from tests.tools.conftest import client_for
from tools.models import Activation, Invocation, Schedule
from tools.services.invocations import invocation_perform
from tools.services.schedule_runs import schedules_due_send
from tools.services.schedules import ScheduleError, describe, schedule_create


@pytest.mark.django_db
def test_the_rules_are_said_in_plain_words(active: Activation, world: dict[str, Any]) -> None:
    with pytest.raises(ScheduleError, match="Every 5 to 1440 minutes"):
        schedule_create(activation=active, user=world["admin"], name="x", command="count",
                        payload={}, when="every 1 minutes")
    with pytest.raises(ScheduleError, match="end with the time of day as HH:MM"):
        schedule_create(activation=active, user=world["admin"], name="x", command="count",
                        payload={}, when="daily")
    with pytest.raises(ScheduleError, match="Only reviewers and admins"):
        schedule_create(activation=active, user=world["requester"], name="x", command="count",
                        payload={}, when="every 1 hour")
    with pytest.raises(ScheduleError, match="Unknown command"):
        schedule_create(activation=active, user=world["admin"], name="x", command="nope",
                        payload={}, when="every 1 hour")
    with pytest.raises(ScheduleError, match="not a time zone"):
        schedule_create(activation=active, user=world["admin"], name="x", command="count",
                        payload={}, when="daily 07:00", time_zone="Mars/Olympus")
    daily = schedule_create(activation=active, user=world["reviewer"], name="Morning",
                            command="count", payload={}, when="daily 07:00",
                            time_zone="Europe/Berlin")
    assert describe(daily) == "every day at 07:00 (Europe/Berlin)"


@pytest.mark.django_db(transaction=True)
def test_a_due_schedule_runs_once_and_a_failure_tells_the_owner_once(
        active: Activation, world: dict[str, Any]) -> None:
    schedule = schedule_create(activation=active, user=world["reviewer"], name="Nightly",
                               command="fail", payload={}, when="every 1 hour")
    now = timezone.now()
    assert schedules_due_send(now=now) == []
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now - timedelta(seconds=1))
    assert schedules_due_send(now=now) == [schedule.pk]
    assert schedules_due_send(now=now) == []  # claimed: a second sweep sends nothing
    queued = Invocation.objects.get(schedule=schedule)
    assert queued.caller == "schedule"
    invocation_perform(invocation_id=queued.pk)
    queued.refresh_from_db()
    assert queued.status == "failed"
    notes = Notification.objects.filter(user=world["reviewer"], message__contains="Nightly")
    assert notes.count() == 1 and "there is nothing to add up" in notes.get().message
    # A second failure in a row does not notify again.
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now - timedelta(seconds=1))
    schedules_due_send(now=now + timedelta(seconds=1))
    invocation_perform(invocation_id=Invocation.objects.latest("pk").pk)
    assert notes.count() == 1
    log = client_for(world["requester"]).get(reverse("tools:log", args=[
        "acme", "month-totals"])).content.decode()
    assert "schedule “Nightly”" in log


@pytest.mark.django_db
def test_the_page_adds_a_schedule(active: Activation, world: dict[str, Any]) -> None:
    response = client_for(world["admin"]).post(
        reverse("tools:schedules", args=["acme", "month-totals"]),
        {"name": "Every quarter hour", "command": "count", "payload": "{}",
         "every": "minutes", "interval": "15"})
    assert response.status_code == 302
    page = client_for(world["requester"]).get(reverse("tools:detail", args=[
        "acme", "month-totals"])).content.decode()
    assert "Every quarter hour" in page and "every 15 minutes" in page
