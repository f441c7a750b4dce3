"""An address setting (issue 45) in Chromium at 1280 and 390 px, axe finding nothing serious and
nothing scrolling sideways: the activation review lists it once with the other services, in the
marketplace page's words, and says nothing is entered yet; the admin enters it and approves;
the review then says which host and who approved it, in that same line; the Settings page says
next to the field that saving approves it, and after saving which host it approved.

Nothing is mocked: daphne on the test database.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.browser.checks import accessible_and_fits
from tests.browser.pages import log_in
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import publish_version
from tests.tools.test_address_settings import BOOKINGS_PY, bookings_toml
from tools.models import Activation

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WIDTHS = ((1280, 900), (390, 844))
LINE = "#address-permission-booking_address"


def test_the_address_is_one_line_of_the_review_and_saving_it_says_it_approves_it(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    team = people["team"]
    MembershipFactory(team=team, user=UserFactory(username="ada"), role="admin")
    publish_version(team, name="bookings", body=BOOKINGS_PY, toml=bookings_toml())
    review = server.url + reverse("tools:activate", args=["acme", "bookings", "1.0.0"])[1:]
    settings = server.url + reverse("tools:settings", args=["acme", "bookings"])[1:]
    pages = {}
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "ada")
        page.goto(review)
        expect(page.locator(LINE)).to_have_count(1)
        expect(page.locator(LINE)).to_contain_text(
            "the address your team enters as “booking_address”")
        expect(page.locator(LINE)).to_contain_text("None entered yet")
        expect(page.get_by_text("Other services: none")).to_have_count(0)
        accessible_and_fits(page, "the review of a plugin with an address setting", width)
        pages[width] = page

    admin = pages[390]
    admin.get_by_label("The web address of our booking system").fill("bookings.example.org")
    admin.get_by_role("button", name="Approve and activate").click()
    expect(admin.get_by_text("is now in use by the team")).to_be_visible()
    admin.goto(settings)
    approval = admin.locator("#setting-booking_address-approval")
    expect(approval).to_contain_text("saving it approves it")
    expect(approval).to_contain_text("Approved: sends data to bookings.example.org, approved by"
                                     " ada.")
    accessible_and_fits(admin, "the settings page with an address", 390)
    admin.get_by_label("booking_address").fill("https://other.example.org")
    admin.get_by_role("button", name="Save", exact=True).click()
    expect(admin.get_by_text("Saved (booking_address); approved: sends data to"
                             " other.example.org.")).to_be_visible()
    accessible_and_fits(admin, "the settings page after saving an address", 390)

    wide = pages[1280]
    decided = Activation.objects.get(status="active")
    wide.goto(server.url + reverse("tools:activation", args=["acme", decided.pk])[1:])
    expect(wide.locator(LINE)).to_have_count(1)
    expect(wide.locator(LINE)).to_contain_text(
        "Entered by your team: sends data to other.example.org, approved by ada")
    accessible_and_fits(wide, "the review once the address is approved", 1280)
    wide.goto(settings)
    expect(wide.locator("#setting-booking_address-approval")).to_contain_text(
        "Approved: sends data to other.example.org")
    accessible_and_fits(wide, "the settings page with an address", 1280)
