"""A requester's plugin becomes a tool, in Chromium: the team admin reviews what it may do and
activates it, then the requester uses its form with an uploaded CSV and reads the result as a
table, on a desktop, on a phone-sized screen and without JavaScript; axe finds nothing serious.

Nothing is mocked: daphne on the test database, the call queued through the outbox and run in
the sandbox by an in-process Dramatiq worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from marketplace.models import PluginVersion
from tests.browser.pages import log_in
from tests.browser.test_accessibility import FAILING, audit, describe
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import publish_version

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

RESULT_MS = 60_000  # the worker starts a sandbox on a shared 2-core machine


def test_an_approved_plugin_is_used_through_its_form_with_an_uploaded_csv(
        server: LiveServer, worker: Any, people: dict, context_factory: Any,
        tmp_path: Path, screenshots: Path) -> None:
    MembershipFactory(team=people["team"], user=UserFactory(username="ada"), role="admin")
    version = publish_version(people["team"])
    PluginVersion.objects.filter(pk=version.pk).update(submitted_by=people["requester"])

    # bypass_csp: axe is injected as an inline script, which the pages' CSP refuses.
    admin = context_factory(bypass_csp=True).new_page()
    log_in(admin, server, "ada")
    admin.get_by_role("link", name="Tools").click()
    expect(admin.get_by_text("Your team uses no plugin yet.")).to_be_visible()
    admin.get_by_role("link", name="Review and activate").click()
    expect(admin.get_by_role("heading", name="What it may do")).to_be_visible()
    expect(admin.get_by_text("The key of your accounting system")).to_be_visible()
    assert_accessible(admin, "the activation review")
    admin.get_by_role("button", name="Approve and activate").click()
    expect(admin.get_by_text("month-totals 1.0.0 is now in use by the team.")).to_be_visible()

    csv = tmp_path / "expenses.csv"
    csv.write_text("month,amount\nJan,2\nJan,3.5\nFeb,1\n")
    # A desktop, a phone, and a browser without JavaScript (the result page then refreshes
    # itself until the result is there).
    for viewport, script in (({"width": 1280, "height": 900}, True),
                             ({"width": 390, "height": 844}, True),
                             ({"width": 1280, "height": 900}, False)):
        requester = context_factory(viewport=viewport, bypass_csp=True,
                                    java_script_enabled=script).new_page()
        log_in(requester, server, "rita")
        requester.get_by_role("link", name="Tools").click()
        requester.get_by_role("link", name="month-totals").click()
        if script:
            assert_accessible(requester, f"the tool's page at {viewport['width']} px")
        if viewport["width"] == 1280 and script:
            requester.screenshot(path=str(screenshots / "tool-form.png"), full_page=True)
        form = requester.locator("#command-totals")
        form.get_by_label("…or upload a file for “Rows”").set_input_files(str(csv))
        form.get_by_role("button", name="Run totals").click()
        table = requester.get_by_role("table")
        expect(table).to_be_visible(timeout=RESULT_MS)
        expect(table.get_by_role("columnheader", name="month")).to_be_visible()
        expect(table.get_by_role("row", name="Jan 5.5")).to_be_visible()
        expect(table.get_by_role("row", name="Feb 1")).to_be_visible()
        expect(requester.get_by_role("link", name="CSV (for a spreadsheet)")).to_be_visible()
        if script:
            requester.screenshot(path=str(screenshots / f"tool-result-{viewport['width']}.png"),
                                 full_page=True)
            assert_accessible(requester, f"the result at {viewport['width']} px")
        # The page fits the screen: nothing scrolls sideways.
        assert requester.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def assert_accessible(page: Any, name: str) -> None:
    failing = [v for v in audit(page) if v["impact"] in FAILING]
    assert not failing, f"{name}: {describe(failing)}"
