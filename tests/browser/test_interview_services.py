"""Issues 27 and 45 in a real browser, on a desktop (1280 px) and a phone (390 px): "Does this
tool need to talk to other systems?" shows its questions only for "Yes"; the requester names two
systems, one whose address they do not know, adds and removes a row with the keyboard without
losing what was typed, says how often it runs and what period each run covers, and fixes an
address said wrong next to it. Every state of the page fits the window and passes axe."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from projects.interview import spec_assembly
from projects.models import Interview
from tests.browser.checks import accessible_and_fits
from tests.browser.pages import continue_, greet_up_to_services, log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def system(page: Page, number: int) -> Any:
    return page.get_by_role("group", name=f"System {number}", exact=False).first


@pytest.mark.parametrize("width", [1280, 390])
def test_two_systems_one_address_unknown_and_a_weekly_run(
        server: LiveServer, people: dict, context_factory: Any, width: int) -> None:
    page = context_factory(viewport={"width": width, "height": 900}, bypass_csp=True).new_page()
    log_in(page, server, "rita")
    greet_up_to_services(page)

    no = page.get_by_label("No, it works on its own")
    expect(no).to_be_checked()
    # The page's heading takes the focus when it loads (autofocus, applied after load): wait
    # for it, or the browser may move the focus off the radio button between focus and key.
    expect(page.get_by_role("heading", level=1)).to_be_focused()
    name = page.locator("#svc-0-name")
    expect(name).to_be_hidden()  # "No" needs nothing more
    no.focus()
    page.keyboard.press("ArrowDown")  # radio buttons: the arrow keys choose
    expect(page.get_by_label("Yes, it talks to other systems")).to_be_checked()
    expect(name).to_be_visible()

    first = system(page, 1)
    name.fill("our booking system")
    first.get_by_label("It reads from it (a list, a calendar, bookings)").check()
    expect(first.get_by_text("Don't know it?")).to_be_visible()  # the address stays empty
    first.get_by_role("group", name="Thing to provide 1 for system 1").get_by_label(
        "Name").fill("API key")
    first.get_by_label("This is a secret (a password, key or token)").check()
    accessible_and_fits(page, "two systems, the first", width)

    # "Add another system" with the keyboard: the new system's name gets the focus.
    page.get_by_role("button", name="Add another system").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#svc-1-name")).to_be_focused()
    page.keyboard.type("the team chat")
    second = system(page, 2)
    second.get_by_label("It sends to it (a message, a new entry)").check()
    second.get_by_label("Its web address, if you know it").fill("hooks slack com")
    second.get_by_role("group", name="Thing to provide 1 for system 2").get_by_label(
        "Name").fill("channel")

    # A third one, removed again with the keyboard: the others keep what was typed.
    page.get_by_role("button", name="Add another system").press("Enter")
    expect(page.locator("#svc-2-name")).to_be_focused()
    page.keyboard.type("the calendar")
    page.get_by_role("button", name="Remove system 3").press("Enter")
    expect(page.get_by_role("button", name="Add another system")).to_be_focused()
    expect(page.locator("#svc-2-name")).to_have_count(0)
    expect(page.locator("#svc-0-name")).to_have_value("our booking system")
    expect(page.locator("#svc-1-name")).to_have_value("the team chat")
    expect(page.locator("#svc-0-need-0-secret")).to_be_checked()

    # How often: every week on Monday at 08:00, each run covering last week.
    page.get_by_label("Every week, on the days I choose").check()
    page.get_by_label("Monday").check()
    page.get_by_label("At what time?").fill("08:00")
    page.get_by_label("In your own words").fill("every Monday morning")
    page.get_by_label("What period does each run cover?").select_option("last_week")
    accessible_and_fits(page, "two systems and a weekly run", width)
    continue_(page)

    expect(page.locator("#svc-1-address-error")).to_contain_text(
        "The web address must not contain spaces.")
    expect(page.locator("#svc-1-address")).to_have_value("hooks slack com")
    expect(page.locator("#svc-0-address")).to_have_value("")  # unknown is no error
    expect(page.get_by_label("Monday")).to_be_checked()
    accessible_and_fits(page, "an address said wrong", width)

    page.locator("#svc-1-address").fill("hooks.slack.com")
    continue_(page)
    expect(page.get_by_role("heading", level=1)).to_contain_text("A few more questions")
    page.get_by_label("Should the greeting be formal or casual?").fill("Casual.")
    continue_(page)

    expect(page.get_by_role("heading", name="Check your request")).to_be_visible()
    expect(page.get_by_text("our booking system: it reads from it, its address: your team's "
                            "admin enters it when the tool is activated")).to_be_visible()
    expect(page.get_by_text("the team chat: it sends to it, at hooks.slack.com")).to_be_visible()
    expect(page.get_by_text("every week on Monday at 08:00 (\u201cevery Monday morning\u201d)"
                            )).to_be_visible()
    expect(page.get_by_text("Last week (Monday to Sunday)", exact=True)).to_be_visible()
    accessible_and_fits(page, "the summary", width)

    interview = Interview.objects.get(requester=people["requester"])
    assembly = spec_assembly.assemble(interview.request, interview.state, interview.questions)
    assert assembly.errors == {}  # Start would not ask for the unknown address
    services = assembly.spec["services"]
    assert services["hosts"] == ["hooks.slack.com"]
    assert [(s["name"], s["host"], s["address_setting"]) for s in services["systems"]] == [
        ("our booking system", None, "our_booking_system_address"),
        ("the team chat", "hooks.slack.com", None)]
    assert assembly.spec["schedule"] == {"words": "every Monday morning",
                                         "when": "weekly mon 08:00", "command": "greet",
                                         "period": "last_week"}
