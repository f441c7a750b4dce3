"""The Prices page on a phone (issue 28, item 9: "the price table is cut off on a phone"): at
390 px every column of a price row is on screen without scrolling a box sideways (each row
stacks its cells under their column names), and at 1280 px it is still a table. axe finds
nothing serious and the page does not scroll sideways."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from autocoder.llm.models import ModelPrice
from tests.browser.pages import log_in
from tests.browser.test_tool_schedules import WIDTHS, check
from tests.factories import UserFactory
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

HIDDEN_CELLS = """() => {
  const table = document.querySelector("#prices-heading ~ table");
  const right = window.innerWidth;
  const cut = [...table.querySelectorAll("tbody td")].filter((cell) => {
    const box = cell.getBoundingClientRect();
    return box.right > right + 1 || box.left < -1;
  });
  return {cut: cut.map((cell) => cell.textContent.trim()),
          scrolls: table.scrollWidth > table.clientWidth + 1};
}"""


def test_every_column_of_a_price_shows_on_a_phone(server: LiveServer, context_factory: Any,
                                                  transactional_db: None) -> None:
    UserFactory(username="sam", is_staff=True, is_superuser=True)
    ModelPrice.objects.create(model="claude-sonnet-4-5-20250929",
                              prompt_per_million=Decimal("3.0000"),
                              completion_per_million=Decimal("15.0000"))
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "sam")
        page.goto(server.url.rstrip("/") + reverse("llm:model_prices"))
        expect(page.get_by_role("heading", name="Price table")).to_be_visible()
        assert page.evaluate(HIDDEN_CELLS) == {"cut": [], "scrolls": False}, width
        expect(page.get_by_role("button", name="Remove the price of "
                                               "claude-sonnet-4-5-20250929")).to_be_visible()
        check(page, f"prices page at {width} px")
