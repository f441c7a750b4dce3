"""The schedule form of a tool's page in Chromium at 1280 and 390 px, with the keyboard where a
person would use it: a weekly rule (Monday, 08:00, Europe/Berlin) and a period put in the input
with the period picker; only the fields of the chosen rhythm show; saved, the page says the next
run and its period. axe finds nothing serious and nothing scrolls sideways, before and after.

Nothing is mocked: daphne on the test database, the form posted to the real view.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.checks import accessible_and_fits
from tests.browser.pages import log_in
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import publish_version
from tools.models import Invocation, Schedule
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import invocation_perform

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WIDTHS = ((1280, 900), (390, 844))
WEEK = '{"start": "{{last_week.start}}", "end": "{{last_week.end}}"}'


def _tool_in_use(people: dict[str, Any]) -> None:
    team = people["team"]
    ada = UserFactory(username="ada")
    MembershipFactory(team=team, user=ada, role="admin")
    version = publish_version(team, visibility="public")
    activation_decide(activation=activation_request(team=team, version=version, user=ada),
                      user=ada, approve=True)
    for event in Invocation.objects.filter(caller="event", status="pending"):
        invocation_perform(invocation_id=event.pk)


def _fill_weekly_with_a_period(page: Page, name: str) -> None:
    form = page.locator("form[data-schedule-form]")
    page.get_by_text("Add a schedule").click()
    form.get_by_label("Name").fill(name)
    form.get_by_label("Command").select_option("count")
    form.get_by_label("How often").select_option("weekly")
    # Only what a weekly rule uses shows.
    expect(form.get_by_role("group", name="Which days")).to_be_visible()
    expect(form.get_by_label("Which day of the month")).to_be_hidden()
    expect(form.get_by_label("Cron expression")).to_be_hidden()
    expect(form.get_by_label("Every how many")).to_be_hidden()
    monday = form.get_by_label("Monday")
    monday.focus()
    page.keyboard.press("Space")
    expect(monday).to_be_checked()
    form.get_by_label("At what time").fill("08:00")
    form.get_by_label("Time zone").select_option("Europe/Berlin")

    # The input: typed, with the two periods put in by the picker, at the cursor.
    payload = form.get_by_label("Input (JSON)")
    payload.fill('{"start": "')
    payload.press("End")
    picker, insert = form.get_by_label("A period to put in the input"), form.get_by_role(
        "button", name="Insert it at the cursor")
    picker.select_option("last_week.start")
    insert.focus()
    page.keyboard.press("Enter")
    expect(form.get_by_role("status")).to_have_text("Put {{last_week.start}} in the input.")
    expect(payload).to_be_focused()
    page.keyboard.type('", "end": "')
    picker.select_option(label="Last week: Sunday")
    insert.click()
    page.keyboard.type('"}')
    expect(payload).to_have_value(WEEK)


def test_the_schedule_form_with_a_weekly_rule_and_a_period(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    # The services announce changes through async_to_sync, refused where Playwright's loop runs.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_tool_in_use, people).result()
    for width, height in WIDTHS:
        rob = context_factory(viewport={"width": width, "height": height},
                              bypass_csp=True).new_page()
        log_in(rob, server, "rob")
        rob.goto(f"{server.url}t/acme/tools/month-totals/#schedules")
        name = f"Monday report at {width}"
        _fill_weekly_with_a_period(rob, name)
        accessible_and_fits(rob, "the schedule form, filled in", width)

        rob.get_by_role("button", name="Save the schedule").click()
        expect(rob.get_by_text("Schedule saved: every Monday at 08:00 (Europe/Berlin). "
                               "Next: Monday", exact=False)).to_be_visible()
        saved = Schedule.objects.get(name=name)
        assert (saved.when, saved.time_zone, saved.command) == (
            "weekly mon 08:00", "Europe/Berlin", "count")
        item = rob.locator(f"#schedule-{saved.pk}")
        expect(item).to_contain_text("count every Monday at 08:00 (Europe/Berlin)")
        expect(item.locator(".schedule-next")).to_contain_text(", period ")
        expect(item.locator(".schedule-next")).to_contain_text(" 08:00 CE")
        accessible_and_fits(rob, "the tool's page with the saved schedule", width)

        # A mistake comes back with the form as typed and the reason, also on a phone.
        rob.get_by_text("Add a schedule").click()
        form = rob.locator("form[data-schedule-form]")
        form.get_by_label("Name").fill("Broken")
        form.get_by_label("How often").select_option("weekly")
        form.get_by_label("Monday").check()
        form.get_by_label("Input (JSON)").fill('{"start": "{{last_year.start}}"}')
        rob.get_by_role("button", name="Save the schedule").click()
        expect(rob.get_by_role("alert")).to_contain_text(
            "The input uses {{last_year.start}}, which is not a period the schedule knows.")
        expect(rob.locator("form[data-schedule-form]").get_by_label("Name")).to_have_value(
            "Broken")
        accessible_and_fits(rob, "the schedule form with a mistake", width)
    assert not Schedule.objects.filter(name="Broken").exists()
