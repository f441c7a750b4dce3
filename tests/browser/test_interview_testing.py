"""Issue 30 in a real browser, on a phone (390 px): the requester pastes the service's API
documentation, picks how thoroughly the tool is tested with the keyboard, and fixes a bad number
on the summary, which keeps what was typed; both pages fit the phone and pass axe."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from projects.models import Interview
from tests.browser.checks import accessible_and_fits
from tests.browser.pages import continue_, greet_up_to_services, log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_requester_on_a_phone_gives_api_docs_and_picks_the_testing(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    context = context_factory(viewport={"width": 390, "height": 844}, bypass_csp=True)
    page = context.new_page()
    log_in(page, server, "rita")
    greet_up_to_services(page)

    page.get_by_label("Yes, it talks to other systems").check()
    page.get_by_label("What is it, in your words?").fill("our Slack")
    page.get_by_label("It sends to it (a message, a new entry)").check()
    page.get_by_label("Its web address, if you know it").fill("hooks.slack.com")
    docs = page.get_by_label("The systems' API documentation")
    expect(page.get_by_text("Paste the systems' API documentation, if you have it: the model "
                            "reads it while writing the plugin.", exact=False)).to_be_visible()
    docs.fill("POST /services/T1: {\"text\": \"...\"} answers ok")
    accessible_and_fits(page, page.url, 390)
    page.get_by_label("Semi-automatic").check()
    continue_(page)
    expect(page.get_by_role("heading", level=1)).to_contain_text("A few more questions")
    page.get_by_label("Should the greeting be formal or casual?").fill("Casual.")
    continue_(page)

    expect(page.get_by_role("heading", name="Check your request")).to_be_visible()
    group = page.get_by_role("group", name="How thoroughly should the tool be tested?")
    comprehensive = group.get_by_label("Comprehensive")
    expect(comprehensive).to_be_checked()  # it talks to a service
    comprehensive.focus()
    page.keyboard.press("ArrowDown")  # radio buttons: the arrow keys choose
    expect(group.get_by_label("Stress")).to_be_checked()
    threshold = page.get_by_label("Quality needed to finish (percent)")
    threshold.fill("0")
    page.get_by_role("button", name="Save how it is tested").click()
    expect(page.locator("#testing-threshold-error")).to_contain_text(
        "Give the quality needed as a whole number from 1 to 100")
    expect(threshold).to_have_value("0")
    expect(threshold).to_have_attribute("aria-invalid", "true")
    accessible_and_fits(page, page.url, 390)

    page.get_by_label("Quality needed to finish (percent)").fill("92")
    page.get_by_role("button", name="Save how it is tested").click()
    expect(page.locator(".testing-form .saved")).to_have_text(
        "Saved: Stress, quality 92%, at most 12 attempts.")
    accessible_and_fits(page, page.url, 390)
    interview = Interview.objects.get(requester=people["requester"])
    assert interview.state["testing"]["strategy"] == "stress"
    assert interview.state["api_docs"].startswith("POST /services/T1")
