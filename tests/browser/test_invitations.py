"""In Chromium, on a phone's width and with the keyboard alone: a team admin invites someone by
name and reads the same answer as for any name; the invited person finds the invitation from
the bell and their home page and accepts it, and only then is in the team."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from teams.models import Membership
from tests.browser.pages import log_in
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PHONE = {"width": 390, "height": 844}


def tab_to(page: Page, name: str, limit: int = 40) -> None:
    """Press Tab until the focused element is the one named `name` (its accessible name)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim().replace(/\\s+/g, ' ')"
                         ) == name or page.evaluate(
                "document.activeElement.labels?.[0]?.textContent.trim() ?? ''") == name:
            return
    raise AssertionError(f"{name!r} was not reached with Tab")


def fits(page: Page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways ({width} px)"


def test_an_invitation_is_sent_and_accepted_with_the_keyboard_on_a_phone(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    alice, ivy = UserFactory(username="alice"), UserFactory(username="ivy")
    MembershipFactory(team=people["team"], user=alice, role="admin")

    admin = context_factory(viewport=PHONE).new_page()
    log_in(admin, server, "alice")
    admin.goto(f"{server.url}t/acme/")
    tab_to(admin, "User name or e-mail address")
    admin.keyboard.type("ivy")
    admin.keyboard.press("Tab")
    admin.keyboard.press("ArrowDown")  # Requester -> Reviewer
    tab_to(admin, "Send the invitation")
    admin.keyboard.press("Enter")
    expect(admin.locator(".messages")).to_contain_text(
        "If an account with that name exists, it has been invited to Acme.")
    expect(admin.locator(".invitation-list")).to_contain_text("ivy as reviewer")
    fits(admin)
    assert not Membership.objects.filter(team=people["team"], user=ivy).exists()

    invited = context_factory(viewport=PHONE).new_page()
    log_in(invited, server, "ivy")
    expect(invited.get_by_role("link", name="Notifications, 1 unread")).to_be_visible()
    expect(invited.get_by_role("heading", name="You are invited")).to_be_visible()
    tab_to(invited, "Answer your invitation")
    invited.keyboard.press("Enter")
    expect(invited.get_by_role("heading", name="Invitations")).to_be_visible()
    expect(invited.get_by_role("heading", name="Acme")).to_be_visible()
    fits(invited)
    tab_to(invited, "Accept the invitation to Acme")
    invited.keyboard.press("Enter")
    expect(invited.locator(".messages")).to_contain_text(
        "Welcome to Acme: you are reviewer here.")
    expect(invited.get_by_role("heading", name="Acme", exact=True)).to_be_visible()
    assert Membership.objects.get(team=people["team"], user=ivy).role == "reviewer"
