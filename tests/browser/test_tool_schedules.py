"""The pages issue 28 changed for tools, in Chromium at 1280 and 390 px, axe finding nothing
serious and nothing scrolling sideways: the Tools list marking a disabled version in use, the
tool's page with a schedule's latest answer, the invocation log naming the portal's events and
leading to a scheduled call's result, the settings page saying what a secret's blanking does
not cover, the token page's curl command, and "Try it" taking a pasted table.

Nothing is mocked: daphne on the test database, the scheduled call and the try run in the
sandbox (the try by an in-process Dramatiq worker).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from tests.browser.pages import log_in
from tests.browser.test_accessibility import FAILING, audit, describe
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import publish_version
from tools.models import Invocation, Schedule
from tools.services.activations import activation_decide, activation_request
from tools.services.blocks import version_block
from tools.services.invocations import invocation_perform
from tools.services.schedule_runs import schedules_due_send
from tools.services.schedules import schedule_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

RESULT_MS = 60_000  # the worker starts a sandbox on a shared 2-core machine
WIDTHS = ((1280, 900), (390, 844))


def _tools_with_a_schedule_that_ran(people: dict[str, Any]) -> dict[str, Any]:
    """month-totals in use with a schedule that ran once; a second tool whose version a site
    administrator disabled."""
    team = people["team"]
    ada = UserFactory(username="ada")
    MembershipFactory(team=team, user=ada, role="admin")
    staff = UserFactory(username="sam", is_staff=True)
    active, disabled = (
        activation_decide(activation=activation_request(team=team, version=version, user=ada),
                          user=ada, approve=True)
        for version in (publish_version(team, visibility="public"),
                        publish_version(team, name="old-totals")))
    version_block(version=disabled.version, user=staff, reason="it sends data away")
    for event in Invocation.objects.filter(caller="event", status="pending"):
        invocation_perform(invocation_id=event.pk)
    schedule = schedule_create(activation=active, user=people["reviewer"], name="Month end",
                               command="totals", when="every 1 hour",
                               payload={"rows": [{"month": "Mar", "amount": 7}]})
    now = timezone.now()
    Schedule.objects.filter(pk=schedule.pk).update(next_run_at=now - timedelta(seconds=1))
    schedules_due_send(now=now)
    invocation_perform(invocation_id=Invocation.objects.get(schedule=schedule).pk)
    return {"ada": ada}


def check(page: Page, name: str) -> None:
    failing = [v for v in audit(page) if v["impact"] in FAILING]
    assert not failing, f"{name}: {describe(failing)}"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), name


def test_the_tool_pages_of_issue_28_at_1280_and_390_px(
        server: LiveServer, worker: Any, people: dict[str, Any], context_factory: Any) -> None:
    # The services announce changes through async_to_sync, refused where Playwright's loop runs.
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(_tools_with_a_schedule_that_ran, people).result()
    base = f"{server.url}t/acme/tools/"
    for width, height in WIDTHS:
        # bypass_csp: axe is injected as an inline script, which the pages' CSP refuses.
        rob = context_factory(viewport={"width": width, "height": height},
                              bypass_csp=True).new_page()
        log_in(rob, server, "rob")
        rob.goto(base)
        expect(rob.get_by_text("A site administrator disabled this version everywhere: it "
                               "sends data away")).to_be_visible()
        check(rob, f"the Tools list at {width} px")

        rob.get_by_role("link", name="month-totals", exact=True).click()
        schedules = rob.locator("#schedules")
        expect(schedules.get_by_text("What it answered last")).to_be_visible()
        expect(schedules.get_by_role("row", name="Mar 7")).to_be_visible()
        check(rob, f"the tool's page with a schedule's answer at {width} px")

        rob.goto(f"{base}month-totals/log/")
        expect(rob.get_by_text("the portal: activation").first).to_be_visible()
        check(rob, f"the invocation log at {width} px")
        rob.get_by_role("link", name="What it answered").first.click()
        expect(rob.get_by_text("A call of the schedule “Month end”.")).to_be_visible()
        expect(rob.get_by_role("row", name="Mar 7")).to_be_visible()
        check(rob, f"a scheduled call's result at {width} px")

        rob.goto(f"{server.url}marketplace/p/month-totals/")
        try_it = rob.locator("#try")
        try_it.get_by_label("Input").fill("{oops")
        try_it.get_by_role("button", name="Run in the sandbox").click()
        expect(try_it.get_by_text("This starts like JSON but is not valid JSON")).to_be_visible()
        check(rob, f"Try it refusing broken JSON at {width} px")
        try_it.get_by_label("Input").fill("month\tamount\nJan\t2\nJan\t3\n")
        try_it.get_by_role("button", name="Run in the sandbox").click()
        expect(try_it.get_by_text('"total": 5')).to_be_visible(timeout=RESULT_MS)
        check(rob, f"Try it with a pasted table at {width} px")

        ada = context_factory(viewport={"width": width, "height": height},
                              bypass_csp=True).new_page()
        log_in(ada, server, "ada")
        ada.goto(f"{base}month-totals/settings/")
        expect(ada.get_by_text("A secret never enters the plugin's sandbox",
                               exact=False)).to_be_visible()
        check(ada, f"the settings page at {width} px")
        ada.goto(f"{base}month-totals/tokens/")
        ada.get_by_label("Name").fill(f"accounting at {width}")
        ada.get_by_role("button", name="Create token").click()
        expect(ada.locator("#token-curl-command")).to_contain_text('"month": "Jan"')
        check(ada, f"the token page with its curl command at {width} px")
