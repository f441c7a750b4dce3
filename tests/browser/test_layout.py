"""Every main page fits its window: a phone (390 px) and a laptop (1280 px) never scroll
sideways, and the board's last column (Escalated / Failed, the one that needs a person) is in
view without scrolling."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from tests.browser.pages import log_in
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.live import LiveServer
from tests.projects import demo_data

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WIDTHS = (390, 1280)


@pytest.fixture
def demo(transactional_db: None) -> dict[str, Any]:
    team = TeamFactory(slug="acme", name="Acme")
    users = {name: UserFactory(username=name) for name in ("quinn", "colin", "rob")}
    for name, role in (("quinn", "requester"), ("colin", "requester"), ("rob", "reviewer")):
        MembershipFactory(team=team, user=users[name], role=role)
    data = demo_data.build(team, users["quinn"], users["colin"])
    return {"team": team, "data": data}


def overflow(page: Page) -> dict[str, Any]:
    """How far the page reaches past the window, and the elements that stick out."""
    return page.evaluate("""() => ({
        width: document.documentElement.scrollWidth, window: window.innerWidth,
        outside: [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                         && !e.closest('[data-scrolls]'))
            .slice(0, 5).map(e => e.tagName.toLowerCase() + '.' + e.className)})""")


@pytest.mark.parametrize("width", WIDTHS)
def test_main_pages_fit_the_window(demo: dict[str, Any], server: LiveServer,
                                   context_factory: Any, width: int) -> None:
    data = demo["data"]
    page = context_factory(viewport={"width": width, "height": 900}).new_page()
    log_in(page, server, "rob")
    paths = ["/", "/t/acme/board/", reverse("approval_list"),
             reverse("approval_detail", args=[data.change.pk]),
             reverse("run_detail", args=[data.run.pk]), reverse("notification_list"),
             reverse("marketplace:catalogue")]
    too_wide = {}
    for path in paths:
        page.goto(f"{server.url}{path.lstrip('/')}")
        found = overflow(page)
        if found["width"] > found["window"]:
            too_wide[path] = found
    assert too_wide == {}, f"pages wider than {width} px: {too_wide}"
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Marketplace")).to_be_in_viewport()


def test_the_boards_last_column_is_in_view_on_a_laptop(
        demo: dict[str, Any], server: LiveServer, context_factory: Any) -> None:
    page = context_factory(viewport={"width": 1280, "height": 900}).new_page()
    log_in(page, server, "rob")
    page.goto(f"{server.url}t/acme/board/")
    column = page.locator("#col-escalated_failed")
    expect(column).to_be_visible()
    box = column.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1280, box
