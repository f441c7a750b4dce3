"""Schedules and the tool log (issue 28, item 8): what a scheduled call answered shows on the
tool's page and behind the log (it showed nowhere, the log keeps only sizes); the portal's
events are named as what they are (they showed as `schedule "deleted"`, the activation too);
the Tools list marks a disabled (kill switch) or withdrawn version in use."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from marketplace.models import PluginVersion
from tests.tools.conftest import client_for
from tools.models import Activation, Invocation, Schedule
from tools.services.blocks import version_block
from tools.services.invocations import invocation_perform
from tools.services.schedule_runs import schedules_due_send
from tools.services.schedules import schedule_create

pytestmark = pytest.mark.django_db(transaction=True)


def run_schedule(schedule: Schedule) -> Invocation:
    """Make it due, let the watchdog send it and the worker run it."""
    now = timezone.now()
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now - timedelta(seconds=1))
    assert schedules_due_send(now=now) == [schedule.pk]
    queued = Invocation.objects.filter(schedule=schedule).latest("pk")
    invocation_perform(invocation_id=queued.pk)
    queued.refresh_from_db()
    return queued


def text_of(response: Any) -> str:
    assert response.status_code == 200, response.status_code
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())


def test_a_scheduled_calls_answer_shows_on_the_tools_page_and_behind_the_log(
        active: Activation, world: dict[str, Any]) -> None:
    schedule = schedule_create(activation=active, user=world["reviewer"], name="Month end",
                               command="totals", when="every 1 hour",
                               payload={"rows": [{"month": "Mar", "amount": 7}]})
    done = run_schedule(schedule)
    assert done.status == "ok" and done.output == {"totals": [{"month": "Mar", "total": 7}]}
    # Every member sees it, not only whoever set the schedule up.
    member = client_for(world["requester"])
    page = text_of(member.get(reverse("tools:detail", args=["acme", "month-totals"])))
    assert "What it answered last" in page
    assert "month total Mar 7" in page  # the answer as a table
    result_url = reverse("tools:result", args=["acme", "month-totals", done.pk])
    assert result_url in member.get(reverse("tools:detail", args=[
        "acme", "month-totals"])).content.decode()
    result = text_of(member.get(result_url))
    assert "A call of the schedule “Month end”" in result and "Mar 7" in result
    csv = member.get(reverse("tools:download", args=["acme", "month-totals", done.pk, "csv"]))
    assert csv.status_code == 200 and csv.content.decode() == "month,total\nMar,7\n"
    log = member.get(reverse("tools:log", args=["acme", "month-totals"])).content.decode()
    assert result_url in log and "What it answered" in log
    # Someone's form result is still theirs alone.
    member.post(reverse("tools:run", args=["acme", "month-totals", "count"]), {})
    own = Invocation.objects.filter(caller="user").latest("pk")
    assert client_for(world["reviewer"]).get(reverse("tools:result", args=[
        "acme", "month-totals", own.pk])).status_code == 404


def test_the_log_names_the_portals_events_as_what_they_are(
        active: Activation, world: dict[str, Any]) -> None:
    event = Invocation.objects.get(caller="event", command="activated")
    invocation_perform(invocation_id=event.pk)
    log = text_of(client_for(world["reviewer"]).get(reverse("tools:log", args=[
        "acme", "month-totals"])))
    assert "the portal: activation" in log
    assert "schedule “deleted”" not in log  # as it was, before any schedule existed


def test_the_tools_list_marks_a_disabled_or_withdrawn_version_in_use(
        active: Activation, world: dict[str, Any]) -> None:
    url = reverse("tools:list", args=["acme"])
    assert "disabled" not in text_of(client_for(world["requester"]).get(url))
    PluginVersion.objects.filter(pk=active.version_id).update(yanked=True,
                                                              yank_reason="wrong totals")
    page = text_of(client_for(world["requester"]).get(url))
    assert "withdrawn Its publisher withdrew this version: wrong totals." in page
    version_block(version=active.version, user=world["staff"], reason="it sends data away")
    page = text_of(client_for(world["admin"]).get(url))
    assert ("disabled A site administrator disabled this version everywhere: it sends data "
            "away. It cannot be used: activate another version below.") in page

