"""The dead ends issue 45 removed, in Chromium at 1280 and 390 px, axe finding nothing serious
and nothing scrolling sideways: the tool's page lists the settings still missing with a link to
the Settings page, where the admin enters the key, after which the list is gone; a member sees
the list and who can fill it in; "Try it" of a plugin that talks to another service offers the
rehearsal first, and sending for real only with a confirmation box.

Nothing is mocked: daphne on the test database.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.checks import accessible_and_fits
from tests.browser.pages import log_in
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import PLUGIN_TOML, publish_version
from tools.services.activations import activation_decide, activation_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

NEEDS_KEY = PLUGIN_TOML.replace('secret = true\nrequired = false\n', 'secret = true\n')
WIDTHS = ((1280, 900), (390, 844))


def test_the_missing_setting_is_listed_filled_in_and_gone_at_both_widths(
        server: LiveServer, people: dict[str, Any], context_factory: Any,
        screenshots: Any) -> None:
    team = people["team"]
    ada = UserFactory(username="ada")
    MembershipFactory(team=team, user=ada, role="admin")
    version = publish_version(team, toml=NEEDS_KEY.replace(
        'network = false\n', 'network = false\nhosts = ["books.example.org"]\n'))
    activation_decide(activation=activation_request(team=team, version=version, user=ada),
                      user=ada, approve=True)
    for width, height in WIDTHS:
        member = context_factory(viewport={"width": width, "height": height},
                                 bypass_csp=True).new_page()
        log_in(member, server, "rita")
        member.goto(f"{server.url}t/acme/tools/month-totals/")
        missing = member.locator("#missing-settings")
        expect(missing.get_by_role("heading", name="Settings still missing")).to_be_visible()
        expect(missing.get_by_text("cannot run until a team admin enters this setting")
               ).to_be_visible()
        expect(missing.get_by_text("one of your team's admins (ada)", exact=False)
               ).to_be_visible()
        accessible_and_fits(member, "the tool's page for a member", width)

        # "Try it": a rehearsal unless sent for real (the team uses this version), confirmed
        member.goto(f"{server.url}marketplace/p/month-totals/v/1.0.0/")
        trying = member.locator("#try")
        expect(trying.get_by_label("Rehearse: send nothing")).to_be_checked()
        expect(trying.get_by_label("Send for real, with Acme's settings")).to_be_visible()
        expect(trying.get_by_label("I confirm: this sends real requests to books.example.org")
               ).not_to_be_checked()
        accessible_and_fits(member, "the marketplace page's Try it", width)

    admin = context_factory(viewport={"width": 390, "height": 844}, bypass_csp=True).new_page()
    log_in(admin, server, "ada")
    admin.goto(f"{server.url}t/acme/tools/month-totals/")
    missing = admin.locator("#missing-settings")
    expect(missing.get_by_text("The key of your accounting system")).to_be_visible()
    admin.screenshot(path=str(screenshots / "tool-missing-settings-390.png"), full_page=True)
    accessible_and_fits(admin, "the tool's page for its admin", 390)
    missing.get_by_role("link", name="Fill it in on the Settings page").click()
    expect(admin.get_by_text("One needed setting has no value yet")).to_be_visible()
    accessible_and_fits(admin, "the settings page", 390)
    admin.get_by_label("api_key").fill("sk-browser-test")
    admin.get_by_role("button", name="Save", exact=True).click()
    expect(admin.get_by_text("Every needed setting has a value")).to_be_visible()
    admin.get_by_role("link", name="Back to the tool").click()
    expect(admin.get_by_role("heading", name="month-totals")).to_be_visible()
    expect(admin.locator("#missing-settings")).to_have_count(0)
