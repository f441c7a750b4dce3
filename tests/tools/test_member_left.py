"""A member who leaves a team takes their schedules' say with them: the schedules they set up
there are paused (the tool's page says why), a scheduled run never tells them anything, and the
runner checks membership again when a schedule is due and when its call runs, whatever way the
member left."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from teams.models import AuditEntry, Membership, Notification
from teams.services.teams import membership_remove
from tests.tools.conftest import client_for
from tools.models import Activation, Invocation, Schedule
from tools.services import invocations
from tools.services.invocations import invocation_perform
from tools.services.schedule_runs import schedules_due_send
from tools.services.schedules import schedule_create


def nightly(active: Activation, world: dict[str, Any], command: str = "fail") -> Schedule:
    """A schedule the reviewer set up, due now."""
    schedule = schedule_create(activation=active, user=world["reviewer"], name="Nightly",
                               command=command, payload={}, when="every 1 hour")
    Schedule.objects.filter(pk=schedule.pk).update(
        next_run_at=timezone.now() - timedelta(seconds=1))
    return schedule


def reviewer_membership(world: dict[str, Any]) -> Membership:
    return Membership.objects.get(team=world["acme"], user=world["reviewer"])


@pytest.mark.django_db
def test_removing_a_member_pauses_their_schedules_and_the_page_says_so(
        active: Activation, world: dict[str, Any]) -> None:
    schedule = nightly(active, world)
    admins = schedule_create(activation=active, user=world["admin"], name="Admin's",
                             command="count", payload={}, when="every 1 hour")
    response = client_for(world["admin"]).post(reverse("team_member_remove", args=[
        "acme", reviewer_membership(world).pk]))
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert not schedule.enabled
    assert schedule.paused_reason == "Paused: acme-reviewer is no longer a member of the team."
    assert Schedule.objects.get(pk=admins.pk).enabled  # only the leaver's
    entry = AuditEntry.objects.get(action="tool.schedule_paused")
    assert entry.actor == world["admin"] and entry.team == world["acme"]
    assert schedules_due_send() == []
    assert not Invocation.objects.filter(schedule=schedule).exists()
    page = client_for(world["requester"]).get(reverse("tools:detail", args=[
        "acme", "month-totals"])).content.decode()
    assert "paused" in page and "acme-reviewer is no longer a member of the team" in page


@pytest.mark.django_db
def test_a_member_removed_another_way_is_caught_when_the_schedule_is_due(
        active: Activation, world: dict[str, Any]) -> None:
    # The admin site or a script deletes the row: no signal, so the runner checks at run time.
    schedule = nightly(active, world)
    reviewer_membership(world).delete()
    assert schedules_due_send() == []
    schedule.refresh_from_db()
    assert not schedule.enabled and "no longer a member" in schedule.paused_reason
    # The run that could not start says why on the tool's page; nothing ran, nobody is told.
    [entry] = Invocation.objects.filter(schedule=schedule)
    assert entry.status == "refused" and entry.error_kind == "owner_left"
    assert "whoever set up this schedule is no longer a member" in entry.error
    assert not Notification.objects.filter(user=world["reviewer"]).exists()
    page = client_for(world["admin"]).get(reverse("tools:detail", args=[
        "acme", "month-totals"])).content.decode()
    assert "could not start" in page and "no longer a member of the team" in page


@pytest.mark.django_db(transaction=True)
def test_a_call_queued_before_the_member_left_is_refused_and_tells_nobody(
        active: Activation, world: dict[str, Any]) -> None:
    schedule = nightly(active, world)
    assert schedules_due_send() == [schedule.pk]
    queued = Invocation.objects.get(schedule=schedule)
    membership_remove(membership=reviewer_membership(world), actor=world["admin"])
    invocation_perform(invocation_id=queued.pk)
    queued.refresh_from_db()
    assert queued.status == "refused" and queued.error_kind == "owner_left"
    assert "no longer a member" in queued.error
    assert not Notification.objects.filter(user=world["reviewer"]).exists()
    # Nothing ran: not the command, not the "schedule" event before it.
    assert not Invocation.objects.filter(caller="event", command="schedule").exists()


@pytest.mark.django_db(transaction=True)
def test_a_failure_is_never_told_to_someone_who_left(active: Activation,
                                                     world: dict[str, Any]) -> None:
    schedule = nightly(active, world)
    assert schedules_due_send() == [schedule.pk]
    queued = Invocation.objects.select_related("team", "plugin", "schedule__owner").get(
        schedule=schedule)
    # The member leaves while the call runs (after the check at its start): the outcome is
    # the runner's last chance not to tell them.
    reviewer_membership(world).delete()
    queued.status, queued.error = Invocation.Status.FAILED, "there is nothing to add up"
    invocations._schedule_outcome(queued)
    assert not Notification.objects.filter(user=world["reviewer"]).exists()


@pytest.mark.django_db
def test_a_paused_schedule_is_resumed_as_someone_elses(active: Activation,
                                                       world: dict[str, Any]) -> None:
    schedule = nightly(active, world, command="count")
    membership_remove(membership=reviewer_membership(world), actor=world["admin"])
    response = client_for(world["admin"]).post(
        reverse("tools:schedules", args=["acme", "month-totals"]), {"resume": schedule.pk})
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.enabled and schedule.owner == world["admin"] and not schedule.paused_reason
    assert schedule.next_run_at > timezone.now()
    assert AuditEntry.objects.filter(action="tool.schedule_resumed").exists()
