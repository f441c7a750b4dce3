"""Every page of the journey (tests/browser/journey.py) fits its window: a laptop (1280x800) and a
phone (390x844) never scroll sideways (`scrollWidth <= innerWidth` on the document; code, diffs
and wide tables scroll inside their own box). The board's columns fit a laptop, the ones that
need a person (Awaiting approval, Escalated / Failed) first; on a phone they come first."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.journey import WIDTHS, journey_data, journey_pages, visit, walk_wizard
from tests.browser.pages import log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def journey(transactional_db: None) -> dict[str, Any]:
    return journey_data()


def overflow(page: Page) -> dict[str, Any]:
    """How far the page reaches past the window, and the elements that stick out."""
    return page.evaluate("""() => ({
        width: document.documentElement.scrollWidth, window: window.innerWidth,
        outside: [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                         && !e.closest('[data-scrolls]'))
            .slice(0, 5).map(e => e.tagName.toLowerCase() + '.' + e.className)})""")


def test_every_page_of_the_journey_fits_a_laptop_and_a_phone(
        journey: dict[str, Any], server: LiveServer, context_factory: Any) -> None:
    visited: list[str] = []
    too_wide: dict[str, Any] = {}

    for width, height in WIDTHS:
        pages: dict[str, Page] = {}

        def as_user(user: str, width: int = width, height: int = height,
                    pages: dict[str, Page] = pages) -> Page:
            if user not in pages:
                context = context_factory(viewport={"width": width, "height": height})
                pages[user] = context.new_page()
                log_in(pages[user], server, user)
            return pages[user]

        def check(page: Page, name: str, width: int = width) -> None:
            found = overflow(page)
            visited.append(f"{width} px {name}: {found['width']} px wide")
            if found["width"] > found["window"]:
                too_wide[f"{name} at {width} px"] = found

        walk_wizard(as_user("quinn"), check)
        for step in journey_pages(journey):
            page = as_user(step.user)
            visit(page, server.url, step)
            check(page, step.name)
        nav = as_user("rob").get_by_role("navigation", name="Main")
        expect(nav.get_by_role("link", name="Marketplace")).to_be_in_viewport()

    print("\n" + "\n".join(visited))
    assert too_wide == {}, f"pages wider than their window: {too_wide}"


def column_boxes(page: Page) -> list[tuple[str, dict[str, float]]]:
    columns = page.locator(".board-column")
    return [(str(columns.nth(i).get_attribute("id")), columns.nth(i).bounding_box() or {})
            for i in range(columns.count())]


def test_the_boards_columns_fit_a_laptop_with_the_human_ones_first(
        journey: dict[str, Any], server: LiveServer, context_factory: Any) -> None:
    page = context_factory(viewport={"width": 1280, "height": 800}).new_page()
    log_in(page, server, "rob")
    page.goto(f"{server.url}t/acme/board/")
    boxes = column_boxes(page)
    assert [key for key, _ in boxes][:2] == ["col-awaiting_approval", "col-escalated_failed"]
    for key, box in boxes:  # every column in view, none cut off
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 1280, (key, box)

    page.set_viewport_size({"width": 390, "height": 844})
    boxes = column_boxes(page)
    assert boxes[0][0] == "col-awaiting_approval"
    first = boxes[0][1]
    assert first["x"] >= 0 and first["x"] + first["width"] <= 390, first
