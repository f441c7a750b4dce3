"""The Model page's status after a save (issue 48), in Chromium at 1280 and 390 px, axe finding
nothing serious and nothing scrolling sideways: a site admin saves a set-up whose model
answers, and the status box says it works (it answered when saved) instead of sending her to
test it again.

The model is the loopback fake server (tests/llm/fakeserver.py), standing in for a hosted
model we cannot reach; the portal is daphne on the test database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.checks import accessible_and_fits
from tests.browser.journey import WIDTHS
from tests.browser.pages import log_in
from tests.factories import UserFactory
from tests.live import LiveServer, live_asgi_server
from tests.llm.conftest import chat_reply
from tests.llm.fakeserver import FakeServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def bare_server(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[LiveServer]:
    for name in ("LLM_PROVIDER", "LLM_SCRIPT", "LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
        setattr(settings, name, "")
    with live_asgi_server() as live:
        yield live


def test_a_saved_model_that_answered_is_shown_as_working(
        bare_server: LiveServer, context_factory: Any, transactional_db: None) -> None:
    UserFactory(username="sam", is_staff=True, is_superuser=True)
    model = FakeServer().start()
    try:
        model.queue(chat_reply("ready"))  # every probe gets it
        for width, height in WIDTHS:
            page = context_factory(viewport={"width": width, "height": height},
                                   bypass_csp=True).new_page()
            log_in(page, bare_server, "sam")
            page.goto(f"{bare_server.url}settings/model/")
            page.get_by_label("OpenAI-compatible", exact=False).first.check()
            page.get_by_label("Base URL").fill(model.url + "/v1")
            page.get_by_label("Model", exact=True).fill(f"coder-{width}")
            page.get_by_role("button", name="Save", exact=True).click()
            expect(page.locator(".messages")).to_contain_text("Saved.")
            status = page.locator("#model-status")
            expect(status).to_contain_text("Working")
            expect(status).to_contain_text("Each model answered when the set-up was saved")
            expect(status).not_to_contain_text("Test connection")
            accessible_and_fits(page, "the Model page after a save", width)
    finally:
        model.stop()
