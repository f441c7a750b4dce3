"""The wizard while the analyst thinks (issue 28, item 7), in Chromium at 1280 and 390 px: the
first Continue shows "Thinking about your answers" at once, the analyst's questions appear one
by one as the model writes them, then the questions page opens by itself. Without JavaScript
the form still posts, and a model that stays silent past the bound is said so plainly on the
next page. axe finds nothing serious and nothing scrolls sideways.

Nothing is mocked: daphne on the test database; the model is a loopback server
(tests/llm/fakeserver.py) streaming like an OpenAI-compatible one, with pauses."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.pages import REQUEST, log_in
from tests.browser.test_tool_schedules import WIDTHS, check
from tests.live import LiveServer, live_asgi_server
from tests.llm.fakeserver import FakeServer, Reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BOUND_S = 8
FORMAL = "Should the greeting be formal or casual?"
EMOJI = "Should it use emoji?"


def chunk(content: str | None = None, *, finish: str | None = None) -> str:
    choices = [] if content is None and finish is None else [
        {"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}]
    return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1,
                                  "model": "slow-model", "choices": choices})


def two_questions_three_seconds_apart() -> Reply:
    first = json.dumps({"question": FORMAL, "priority": "essential", "assumption": "Casual."})
    second = json.dumps({"question": EMOJI, "priority": "nice", "assumption": "No emoji."})
    return Reply(sse=[chunk("[" + first + ", "), 3.0, chunk(second + "]"),
                      chunk(finish="stop"), "data: [DONE]"])


@pytest.fixture
def model() -> Iterator[FakeServer]:
    server = FakeServer().start()
    yield server
    server.stop()


@pytest.fixture
def slow_server(model: FakeServer, monkeypatch: pytest.MonkeyPatch,
                settings: Any) -> Iterator[LiveServer]:
    """Daphne whose model is the loopback server, with an analyst bound of BOUND_S."""
    environment = {"LLM_PROVIDER": "openai", "LLM_MODEL": "slow-model",
                   "LLM_BASE_URL": model.url + "/v1", "LLM_API_KEY": "sk-test",
                   "LLM_SCRIPT": "", "INTERVIEW_ANALYST_TIMEOUT_S": str(BOUND_S)}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
        setattr(settings, name, value)
    with live_asgi_server() as live:
        yield live


def test_the_analysts_questions_appear_as_they_are_written_then_the_questions_page(
        slow_server: LiveServer, model: FakeServer, people: dict[str, Any],
        context_factory: Any) -> None:
    from autocoder.llm.models import ModelSpeed

    for width, height in WIDTHS:
        # Each width as on a fresh installation: the last width's slow reply is not measured
        # yet (a measured slow model is waited for longer: test_interview_slow_model.py).
        ModelSpeed.objects.all().delete()
        model.queue(two_questions_three_seconds_apart())
        # bypass_csp: axe is injected as an inline script, which the pages' CSP refuses.
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, slow_server, "rita")
        page.get_by_role("link", name="New request").first.click()
        page.get_by_label("What do you need?").fill(REQUEST)
        page.get_by_role("button", name="Continue").click()

        expect(page.get_by_role("heading", name="Thinking about your answers")).to_be_visible()
        expect(page).to_have_title(
            "Thinking about your answers \u00b7 person-greeter \u00b7 Autocoder")
        status = page.get_by_role("status").filter(has_text="checking what is still unclear")
        expect(status).to_be_visible()
        expect(page.get_by_text(f"This takes at most {BOUND_S} seconds (as fast as the model "
                                "writes).", exact=False)).to_be_visible()
        asked = page.get_by_role("region", name="It will also ask you")
        # The first question shows while the model is still writing the second.
        expect(asked.get_by_role("listitem")).to_have_text([FORMAL])
        expect(page.locator("[data-elapsed]")).to_have_text(re.compile(r"^ \(\d+ s\)$"))
        check(page, f"thinking page at {width} px")
        expect(page.get_by_role("link", name="Go on without waiting")).to_be_visible()
        expect(asked.get_by_role("listitem")).to_have_text([FORMAL, EMOJI], timeout=10_000)
        expect(page.get_by_role("status").filter(
            has_text="The analyst added 2 more questions; they come after the usual ones.")
        ).to_be_visible()

        # Then the wizard goes on by itself, the analyst's questions counted in its pages.
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "What it should do (page 1 of 5)", timeout=10_000)
        check(page, f"first questions page after the analyst at {width} px")


def test_without_javascript_a_silent_model_gives_way_to_the_checklist_said_plainly(
        slow_server: LiveServer, model: FakeServer, people: dict[str, Any],
        context_factory: Any) -> None:
    model.queue(Reply(delay_s=40, body={}))
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               java_script_enabled=False, bypass_csp=True).new_page()
        log_in(page, slow_server, "rita")
        page.get_by_role("link", name="New request").first.click()
        page.get_by_label("What do you need?").fill(REQUEST)
        page.get_by_role("button", name="Continue").click()
        expect(page.get_by_text(
            f"The analyst model did not answer within {BOUND_S} seconds, so the wizard goes on "
            "with its usual questions alone.")).to_be_visible(timeout=(BOUND_S + 10) * 1000)
        expect(page.get_by_role("heading", level=1)).to_have_text(
            "What it should do (page 1 of 4)")
