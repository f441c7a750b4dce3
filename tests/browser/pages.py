"""Steps a person takes in the browser, shared by the browser tests."""

from __future__ import annotations

import time
from collections.abc import Callable

from playwright.sync_api import Page, expect

from tests.factories import PASSWORD
from tests.live import LiveServer

REQUEST = "I need something that greets a person by name, politely."
# How long an open page may take to show a change made elsewhere, counted from the moment the
# change is saved (the tests start counting only once the saving page shows the result): the
# event goes through Redis and the websocket, the page waits 250 ms for more events, then
# re-fetches the fragment. Generous for a busy 2-core machine, yet far below anything but a
# working live channel: no test page reloads or polls.
LIVE_UPDATE_MS = 3000


def log_in(page: Page, server: LiveServer, username: str) -> None:
    page.goto(f"{server.url}login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name=f"Welcome, {username}")).to_be_visible()


def log_out(page: Page) -> None:
    page.get_by_role("button", name="Log out").click()
    expect(page.get_by_role("heading", name="Log in")).to_be_visible()


def describe(page: Page, text: str = REQUEST) -> None:
    page.get_by_role("link", name="New request").first.click()
    expect(page.get_by_role("heading", name="What do you need?")).to_be_visible()
    page.get_by_label("What do you need?").fill(text)
    page.get_by_role("button", name="Continue").click()
    expect(page.get_by_text("What tasks should it do for you?")).to_be_visible()


def continue_(page: Page) -> None:
    page.locator(".actions").get_by_role("button", name="Save and continue").click()


def answer_actions(page: Page) -> None:
    page.get_by_label("What tasks should it do for you?").fill(
        "greet: say hello to someone by name")
    continue_(page)
    expect(page.get_by_text("What will you give it for \u201cgreet\u201d?")).to_be_visible()


def fill_example(page: Page, number: int, given: str, result: str) -> None:
    example = page.get_by_role("group", name=f"Example {number}", exact=True)
    example.get_by_label("What goes in").fill(given)
    example.get_by_label("What should come back").fill(result)


def greet_up_to_examples(page: Page) -> None:
    """A logged-in requester asks for the greeting tool, names what goes in and comes back,
    and reaches the examples."""
    describe(page)
    answer_actions(page)
    page.get_by_label("What will you give it for \u201cgreet\u201d?").fill("name")
    page.get_by_label("What should you get back from \u201cgreet\u201d?").fill("message")
    continue_(page)


def greet_up_to_services(page: Page) -> None:
    """A logged-in requester asks for the greeting tool with two examples and reaches the
    question of what it talks to."""
    greet_up_to_examples(page)
    fill_example(page, 1, "name: Ada", "message: Hello, Ada!")
    fill_example(page, 2, "name: Linus", "message: Hello, Linus!")
    continue_(page)


def wait_until_live(page: Page) -> None:
    """Wait for the page's websocket to be open, and mark the document to notice a reload."""
    expect(page.locator("[data-live-target]")).to_have_attribute("data-live", "open")
    page.evaluate("window.__sameDocument = true")  # gone if the page ever reloads


def same_document(page: Page) -> bool:
    return bool(page.evaluate("window.__sameDocument === true"))


def wait_for(condition: Callable[[], bool], timeout_s: float = 60,
             what: str = "condition") -> None:
    """Poll a condition outside the browser (the database, the sandbox's processes)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
