"""A disabled button's reason is read whole (issue 48: it ended in "desk.."), in Chromium at
1280 and 390 px, axe finding nothing serious and nothing scrolling sideways: a site admin
disables a version with a long reason that ends in its own full stop; the tool's page shows that
reason entire, once, with one full stop, as the description of its disabled Run button, and the
tools page says it the same way. A reason over the limit is refused with the limit named and
stays in the form, instead of being cut.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from teams.models import Membership
from tests.browser.checks import accessible_and_fits
from tests.browser.journey import WIDTHS
from tests.browser.pages import log_in
from tests.browser.test_words_and_phone import in_use
from tests.factories import UserFactory
from tests.live import LiveServer
from tools.services.blocks import MAX_REASON_CHARS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

REASON = ("It adds the refunds to the spending, so every month's total is too high; the "
          "treasurer found it when the club's figures did not match the bank statement. Use "
          "the spreadsheet again until a fixed version is out, and bring questions about it to "
          "the volunteers at the front desk.")


def disable_in_the_browser(page: Page, server: LiveServer, reason: str) -> None:
    page.goto(f"{server.url}tools/kill-switch/")
    page.get_by_label("Plugin name").fill("month-totals")
    page.get_by_label("Version").fill("1.0.0")
    page.get_by_label("Why (the teams read this)").fill(reason)
    page.get_by_role("button", name="Disable everywhere").click()


def test_a_disabled_versions_reason_is_shown_whole_beside_its_disabled_button(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    Membership.objects.filter(user=people["reviewer"]).update(role="admin")
    in_use(people["team"], people["reviewer"])
    UserFactory(username="sam", is_staff=True)

    staff = context_factory(bypass_csp=True).new_page()
    log_in(staff, server, "sam")
    # The textarea stops at the limit; a reason posted past it (another client) is refused
    # with the limit named, and what was typed is still there.
    box = staff.locator("#ks-reason")
    staff.goto(f"{server.url}tools/kill-switch/")
    assert box.get_attribute("maxlength") == str(MAX_REASON_CHARS)
    box.evaluate("box => box.removeAttribute('maxlength')")
    too_long = "x" * (MAX_REASON_CHARS + 1)
    staff.get_by_label("Plugin name").fill("month-totals")
    staff.get_by_label("Version").fill("1.0.0")
    box.fill(too_long)
    staff.get_by_role("button", name="Disable everywhere").click()
    expect(staff.locator("#ks-error")).to_contain_text(
        f"at most {MAX_REASON_CHARS} characters (it has {MAX_REASON_CHARS + 1})")
    expect(box).to_have_value(too_long)
    accessible_and_fits(staff, "the kill switch refusing a long reason", 1280)
    disable_in_the_browser(staff, server, REASON)
    expect(staff.locator("main")).to_contain_text("month-totals 1.0.0 is disabled everywhere")

    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rita")
        page.goto(f"{server.url}t/acme/tools/month-totals/")
        alert = page.locator("#blocked-reason")
        expect(alert).to_have_text(
            f"A site administrator disabled this version everywhere: {REASON} It cannot be "
            "used.")
        run = page.get_by_role("button", name="Run totals")
        expect(run).to_be_disabled()
        expect(run).to_have_accessible_description(alert.inner_text())
        shown = page.evaluate("""() => {
            const box = document.querySelector('#blocked-reason');
            const range = document.createRange();
            range.selectNodeContents(box);
            const text = range.getBoundingClientRect();
            const seen = box.getBoundingClientRect();
            return {fits: text.bottom <= seen.bottom + 1 && text.right <= seen.right + 1,
                    clipped: box.scrollHeight > box.clientHeight + 1
                             || box.scrollWidth > box.clientWidth + 1};
        }""")
        assert shown == {"fits": True, "clipped": False}, (width, shown)
        assert "desk.." not in page.locator("main").inner_text()
        accessible_and_fits(page, "the page of a disabled tool", width)

        page.goto(f"{server.url}t/acme/tools/")
        card = page.locator(".card", has_text="month-totals")
        expect(card).to_contain_text(f"everywhere: {REASON} It cannot be used.")
        assert "desk.." not in card.inner_text()
        accessible_and_fits(page, "the tools page with a disabled tool", width)
