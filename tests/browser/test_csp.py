"""The portal works in Chromium under its Content-Security-Policy: htmx, its websocket extension
and portal.js load, the board's websocket opens, the team switcher submits, and the browser
reports no violation of the policy."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.pages import log_in, wait_until_live
from tests.factories import MembershipFactory, TeamFactory
from tests.live import LiveServer
from tests.projects.portal_factories import ProjectFactory, run_with_history

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# Runs before any script of the page (init scripts are not subject to the page's policy).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (event) {
  window.__cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""


def test_pages_work_under_the_content_security_policy(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    MembershipFactory(team=TeamFactory(slug="beta", name="Beta"), user=people["reviewer"],
                      role="reviewer")
    page = context_factory().new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    log_in(page, server, "rob")
    page.goto(f"{server.url}t/acme/board/")
    expect(page.get_by_role("heading", name="Acme board")).to_be_visible()
    wait_until_live(page)  # htmx and its ws extension ran, and the websocket opened
    assert page.evaluate("typeof htmx") == "object"

    with page.expect_navigation():  # the switcher is submitted by portal.js, no inline handler
        page.select_option("#team-switch", "beta")
    expect(page.locator("#team-switch")).to_have_value("beta")
    page.goto(f"{server.url}t/beta/board/")
    wait_until_live(page)
    run = run_with_history(project=ProjectFactory(team=people["team"],
                                                  requester=people["requester"]))
    page.goto(f"{server.url}runs/{run.pk}/")  # diffs, the streamed reply, the run's socket
    wait_until_live(page)

    assert page.evaluate("window.__cspViolations") == []
    assert not [text for text in console if "Content Security Policy" in text], console
