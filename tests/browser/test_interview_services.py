"""Issue 27 in a real browser, on a phone (390 px): "Does this tool need to talk to another
system?" shows its questions only for "Yes", answers with the keyboard, and says what is wrong
with an address next to it, keeping everything typed."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from projects.models import Interview
from tests.browser.pages import continue_, greet_up_to_services, log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_a_requester_on_a_phone_names_the_service_and_fixes_its_address(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    page = context_factory(viewport={"width": 390, "height": 844}).new_page()
    log_in(page, server, "rita")
    greet_up_to_services(page)

    no = page.get_by_label("No, it works on its own")
    expect(no).to_be_checked()
    address = page.get_by_label("Its web address")
    expect(address).to_be_hidden()  # "No" needs nothing more
    no.focus()
    page.keyboard.press("ArrowDown")  # radio buttons: the arrow keys choose
    expect(page.get_by_label("Yes, it talks to another system")).to_be_checked()
    expect(address).to_be_visible()

    page.get_by_label("Which system?").fill("our Slack")
    address.fill("hooks slack com")
    first = page.get_by_role("group", name="Thing to provide 1", exact=True)
    first.get_by_label("Name").fill("Channel name")
    first.get_by_label("What the team should enter").fill("Where the summary goes")
    second = page.get_by_role("group", name="Thing to provide 2", exact=True)
    second.get_by_label("Name").fill("token")
    second.get_by_label("What the team should enter").fill("The bot's token")
    second.get_by_label("This is a secret (a password, key or token)").check()
    page.get_by_label("It must remember things between uses").check()
    continue_(page)

    expect(page.locator("#svc-address-error")).to_contain_text(
        "The web address must not contain spaces.")
    expect(address).to_have_value("hooks slack com")
    expect(page.get_by_label("Which system?")).to_have_value("our Slack")
    expect(page.get_by_role("group", name="Thing to provide 2", exact=True).get_by_label(
        "This is a secret (a password, key or token)")).to_be_checked()
    expect(page.get_by_text("Saved as channel_name.")).to_be_visible()
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width

    address.fill("https://hooks.slack.com/services/T1/B2")
    continue_(page)
    expect(page.get_by_role("heading", level=1)).to_contain_text("A few more questions")
    state = Interview.objects.get(requester=people["requester"]).state["services"]
    assert state["address"] == "https://hooks.slack.com/services/T1/B2"
    assert [row["secret"] for row in state["settings"]] == [False, True]
    assert state["storage"] is True
