"""The schedule form of a tool's page: plain choices become the `when` words, a mistake shows the
form again as typed with the reason; the activation offers the schedule the request asked for
(the spec's `schedule`), filled in; and migration 0007 keeps the schedules that existed."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta
from html import unescape
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from marketplace.models import PluginVersion
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation, Schedule
from tools.services.activations import activation_request

pytestmark = pytest.mark.django_db
SPEC_SCHEDULE = {"words": "every Monday morning", "when": "weekly mon 08:00",
                 "period": "last_week"}


def post(user: Any, client: Any = None, **fields: Any) -> Any:
    url = reverse("tools:schedules", args=["acme", "month-totals"])
    return (client or client_for(user)).post(url, {
        "name": "Weekly", "command": "count", "every": "weekly", "days": ["mon"],
        "at_time": "08:00", "time_zone": "Europe/Berlin", **fields})


def text(response: Any) -> str:
    """The page's words: inline tags vanish, the others part words."""
    inline = re.sub(r"</?(strong|em|span|a|code)\b[^>]*>", "", response.content.decode())
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", inline)).split())


def test_a_weekly_rule_with_a_period_is_saved_from_plain_choices(
        active: Activation, world: dict[str, Any]) -> None:
    reviewer = client_for(world["reviewer"])
    response = post(world["reviewer"], reviewer, days=["mon", "thu"],
                    payload='{"start": "{{last_week.start}}", "end": "{{last_week.end}}"}')
    assert response.status_code == 302, text(response)
    schedule = Schedule.objects.get()
    assert (schedule.when, schedule.cron, schedule.time_zone) == (
        "weekly mon,thu 08:00", "", "Europe/Berlin")
    assert schedule.payload == {"start": "{{last_week.start}}", "end": "{{last_week.end}}"}
    page = text(reviewer.get(reverse("tools:detail", args=["acme", "month-totals"])))
    assert "Schedule saved: every Monday and Thursday at 08:00 (Europe/Berlin). Next:" in page
    assert re.search(r"Next: (Monday|Thursday) \d+ \w+ \d{4} 08:00 CES?T, period \d", page)


def test_other_rhythms_from_the_form(active: Activation, world: dict[str, Any]) -> None:
    for fields, when, cron in (
            ({"every": "monthly", "month_day": "first-mon"}, "monthly first-mon 08:00", ""),
            ({"every": "monthly", "month_day": "last"}, "monthly last 08:00", ""),
            ({"every": "daily", "at_time": "07:30"}, "daily 07:30", ""),
            ({"every": "minutes", "interval": "15"}, "every 15 minutes", ""),
            ({"every": "cron", "cron": "0 8 * * 1"}, "", "0 8 * * 1")):
        assert post(world["admin"], **fields).status_code == 302
        latest = Schedule.objects.latest("pk")
        assert (latest.when, latest.cron) == (when, cron)


@pytest.mark.parametrize(("fields", "why"), [
    ({"payload": '{"start": "{{last_year.start}}"}'},
     "Input (JSON): The input uses {{last_year.start}}, which is not a period the schedule "
     "knows."),
    ({"days": []}, "Which days: Choose at least one day of the week."),
    ({"at_time": "8am"}, "At what time: Write the time of day as HH:MM, like 08:00."),
    ({"every": "cron", "cron": "0 8 * *"}, "Cron expression: “0 8 * *”: a cron expression has "
                                           "five fields"),
    ({"every": "minutes", "interval": "2"}, "Every how many: Every 5 to 1440 minutes."),
])
def test_a_mistake_shows_the_form_again_as_typed(active: Activation, world: dict[str, Any],
                                                 fields: dict[str, Any], why: str) -> None:
    typed = {"name": "Kept name", "payload": '{"note": "kept {{today}}"}', **fields}
    response = post(world["admin"], **typed)
    assert response.status_code == 400
    said = text(response)
    assert "The schedule was not saved; please correct what is marked below:" in said
    assert why in said
    assert 'value="Kept name"' in response.content.decode()
    assert unescape(typed["payload"]) in unescape(response.content.decode())
    assert not Schedule.objects.exists()


def test_the_activation_offers_the_schedule_the_request_asked_for(
        world: dict[str, Any]) -> None:
    version = publish_version(world["acme"], visibility="public")
    PluginVersion.objects.filter(pk=version.pk).update(spec={
        "name": "month-totals", "schedule": {**SPEC_SCHEDULE, "command": "count"}})
    admin = client_for(world["admin"])
    review = text(admin.get(reverse("tools:activate", args=["acme", "month-totals", "1.0.0"])))
    assert ("How often it should run The request asked for it to run “every Monday morning”: "
            "every Monday at 08:00, each run covering the week before.") in review
    answer = admin.post(reverse("tools:activate", args=["acme", "month-totals", "1.0.0"]),
                        {"decision": "approve"})
    assert answer.status_code == 302
    response = admin.get(answer["Location"])
    page, html = text(response), response.content.decode()
    assert ("The request asked for it to run “every Monday morning” (every Monday at 08:00), "
            "each run covering the week before. The form below is filled in with that") in page
    assert ("The request asked for it to run “every Monday morning”: the schedule is filled in "
            "for you under Schedules below; check it and save it.") in page
    assert '<details id="schedule-add" open>' in html
    assert re.search(r'<option value="weekly" selected>', html)
    assert re.search(r'value="mon"[^>]*checked', html) and 'value="08:00"' in html
    assert "{&quot;start&quot;: &quot;{{last_week.start}}&quot;, &quot;end&quot;: " \
           "&quot;{{last_week.end}}&quot;}" in html
    assert re.search(r'<option value="count" selected>', html)
    # Saved as offered: the page no longer offers it.
    assert post(world["admin"], name="every Monday morning",
                payload='{"start": "{{last_week.start}}", "end": "{{last_week.end}}"}'
                ).status_code == 302
    assert "The request asked for it to run" not in text(admin.get(reverse(
        "tools:detail", args=["acme", "month-totals"])))


def test_an_offer_with_words_the_portal_cannot_read_still_says_them(
        world: dict[str, Any]) -> None:
    version = publish_version(world["acme"], visibility="public")
    PluginVersion.objects.filter(pk=version.pk).update(spec={"schedule": {
        "words": "every other full moon", "when": "lunar", "period": None}})
    asked = activation_request(team=world["acme"], version=version, user=world["requester"])
    review = text(client_for(world["admin"]).get(reverse("tools:activation", args=[
        "acme", asked.pk])))
    assert "The request asked for it to run “every other full moon”." in review


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_the_schedules_that_existed(world: dict[str, Any]) -> None:
    version = publish_version(world["acme"])
    due = datetime(2026, 12, 1, 7, 30, tzinfo=UTC)
    executor = MigrationExecutor(connection)
    executor.migrate([("tools", "0006_change_request_follow_up")])
    try:
        old = executor.loader.project_state([("tools", "0006_change_request_follow_up")]).apps
        Old = old.get_model("tools", "Schedule")
        for name, every, interval, at in (("quarter", "minutes", 15, None),
                                          ("hourly", "hours", 1, None),
                                          ("six", "hours", 6, None),
                                          ("morning", "day", 1, time(7, 30))):
            Old.objects.create(team_id=world["acme"].pk, plugin_id=version.plugin_id,
                               owner_id=world["admin"].pk, name=name, command="count",
                               payload={"n": 1}, every=every, interval=interval, at_time=at,
                               next_run_at=due)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    kept = {s.name: (s.when, s.cron, s.time_zone, s.next_run_at, s.payload, s.enabled)
            for s in Schedule.objects.all()}
    assert kept == {
        "quarter": ("every 15 minutes", "", "UTC", due, {"n": 1}, True),
        "hourly": ("every 1 hour", "", "UTC", due, {"n": 1}, True),
        "six": ("every 6 hours", "", "UTC", due, {"n": 1}, True),
        "morning": ("daily 07:30", "", "UTC", due, {"n": 1}, True),
    }
    from tools.services.schedules import describe, rhythm_of

    morning = Schedule.objects.get(name="morning")
    assert describe(morning) == "every day at 07:30 (UTC)"
    rhythm = rhythm_of(morning)
    from tools.services.calendar import next_run

    assert next_run(rhythm.rule, rhythm.zone, due) == due + timedelta(days=1)
