"""Setting up a webhook trigger on a tool's Triggers page, in Chromium at 1280 and 390 px, axe
finding nothing serious and nothing scrolling sideways: the admin goes from the tool's page to
its Triggers page, sets one up for GitHub, sees its address and its secret once with copy
buttons (the clipboard gets the secret), a delivery signed with that secret is listed as
started, the trigger is paused, and the tool's page lists it with the delivery; the secret is
not on any page afterwards.

Nothing is mocked: daphne on the test database; the delivery is a real HTTP request to it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.checks import accessible_and_fits
from tests.browser.pages import log_in
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import publish_version
from tests.tools.test_triggers import ECHO_PY, ECHO_TOML
from tools.models import Trigger
from tools.services.activations import activation_decide, activation_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WIDTHS = ((1280, 900), (390, 844))


def deliver(url: str, secret: str, delivery: str) -> int:
    """A delivery as GitHub signs it."""
    body = json.dumps({"action": "opened", "issue": {"number": 7}}).encode()
    signature = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "X-Hub-Signature-256": f"sha256={signature}",
        "X-GitHub-Delivery": delivery})
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - the live server
        return int(answer.status)


def test_an_admin_sets_up_a_trigger_at_both_widths(
        server: LiveServer, people: dict[str, Any], context_factory: Any,
        screenshots: Any) -> None:
    team = people["team"]
    ada = UserFactory(username="ada")
    MembershipFactory(team=team, user=ada, role="admin")
    version = publish_version(team, toml=ECHO_TOML, body=ECHO_PY)
    activation_decide(activation=activation_request(team=team, version=version, user=ada),
                      user=ada, approve=True)
    for width, height in WIDTHS:
        context = context_factory(viewport={"width": width, "height": height},
                                  bypass_csp=True)
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
        page = context.new_page()
        log_in(page, server, "ada")
        page.goto(f"{server.url}t/acme/tools/month-totals/")
        triggers = page.locator("#triggers")
        if width == 1280:  # the 390 px round finds the first round's trigger
            expect(triggers.get_by_text("No trigger: no other system starts this tool.")
                   ).to_be_visible()
        triggers.get_by_role("link", name="Set up or manage triggers").click()
        expect(page.get_by_role("heading", name="Triggers of month-totals")).to_be_visible()
        accessible_and_fits(page, "the Triggers page", width)

        name = f"Issues at {width}"
        page.get_by_label("Name").fill(name)
        page.get_by_label("Command it runs").select_option("echo")
        page.get_by_label("GitHub (a repository's or organisation's webhook)").check()
        page.get_by_label("Fixed values (JSON)").fill('{"source": "github"}')
        page.get_by_role("button", name="Set up the trigger").click()
        made = page.locator("#trigger-made")
        expect(made.get_by_role("heading", name=f"Trigger “{name}” is set up")).to_be_visible()
        address = made.locator("#made-url").inner_text().strip()
        trigger = Trigger.objects.get(name=name)
        assert address == f"{server.url}hooks/{trigger.public_id}/"
        secret = made.locator("#made-secret").inner_text().strip()
        assert secret.startswith("whsec_")
        made.get_by_role("button", name="Copy the secret").click()
        expect(page.get_by_text("Copied to the clipboard.")).to_be_attached()
        assert page.evaluate("navigator.clipboard.readText()") == secret
        if width == 390:
            page.screenshot(path=str(screenshots / "tool-trigger-made-390.png"),
                            full_page=True)
        accessible_and_fits(page, "the Triggers page with a new trigger", width)

        assert deliver(address, secret, f"gh-{width}") == 202
        page.goto(f"{server.url}t/acme/tools/month-totals/triggers/")
        card = page.locator(f"#trigger-{trigger.pk}")
        expect(card.get_by_text("Started the command")).to_be_visible()
        card.get_by_role("button", name=f"Pause “{name}”").click()
        expect(page.get_by_text("Paused: deliveries are answered and listed")).to_be_visible()
        expect(page.locator(f"#trigger-{trigger.pk}").get_by_text("paused", exact=True)
               ).to_be_visible()
        assert secret not in page.content()
        accessible_and_fits(page, "the Triggers page with a paused trigger", width)

        page.goto(f"{server.url}t/acme/tools/month-totals/")
        listed = page.locator("#triggers").locator(f"#trigger-{trigger.pk}")
        expect(listed.get_by_text(name)).to_be_visible()
        expect(listed.get_by_text("Started the command")).to_be_visible()
        assert secret not in page.content()
        accessible_and_fits(page, "the tool's page with its triggers", width)
