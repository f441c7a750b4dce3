"""Words, one at a time, and the first screen of a phone (issue 48), in Chromium at 1280 and
390 px, axe finding nothing serious and nothing scrolling sideways:

- on a phone the navigation and an admin's "not connected" banner leave most of the first
  screen to the page;
- a plugin's Install and Try it come right under its head on a phone, before the README (beside
  it on a wide screen);
- the audit log says which plugin and version an admin activated, not "2 3 in team 1";
- a question whose title takes two lines has it inside its box, and the wizard's counter of
  pages done keeps its total while tasks add questions.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections
from playwright.sync_api import Page, expect

from teams.models import Membership
from tests.browser.checks import accessible_and_fits
from tests.browser.journey import WIDTHS
from tests.browser.pages import answer_actions, continue_, describe, log_in
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.live import LiveServer, live_asgi_server
from tests.tools.conftest import publish_version
from tools.services.activations import activation_decide, activation_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PHONE = WIDTHS[1]


@pytest.fixture
def bare_server(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[LiveServer]:
    """No model set up anywhere: a site admin sees the "not connected" banner."""
    for name in ("LLM_PROVIDER", "LLM_SCRIPT", "LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
        setattr(settings, name, "")
    with live_asgi_server() as live:
        yield live


def bottom(page: Page, selector: str) -> float:
    return float(page.evaluate(
        f"document.querySelector({selector!r}).getBoundingClientRect().bottom"))


def test_on_a_phone_the_navigation_and_the_admins_banner_stay_small(
        bare_server: LiveServer, context_factory: Any, transactional_db: None) -> None:
    team = TeamFactory(slug="acme", name="Acme")
    MembershipFactory(team=team, user=UserFactory(username="sam", is_staff=True,
                                                  is_superuser=True), role="admin")
    width, height = PHONE
    page = context_factory(viewport={"width": width, "height": height},
                           bypass_csp=True).new_page()
    log_in(page, bare_server, "sam")
    expect(page.locator("#model-banner")).to_contain_text("Generation is not connected")
    expect(page.locator("#model-banner").get_by_role("link", name="Set up the model")
           ).to_be_visible()
    # It was 283 px (a third of the screen): the bar is two short rows, the banner one line.
    assert bottom(page, "header.topbar") <= 100
    assert bottom(page, "#model-banner") <= 0.25 * height
    accessible_and_fits(page, "the home page of a site admin without a model", width)


def top(page: Page, selector: str) -> float:
    return float(page.evaluate(
        f"document.querySelector({selector!r}).getBoundingClientRect().top"))


def left(page: Page, selector: str) -> float:
    return float(page.evaluate(
        f"document.querySelector({selector!r}).getBoundingClientRect().left"))


def right(page: Page, selector: str) -> float:
    return float(page.evaluate(
        f"document.querySelector({selector!r}).getBoundingClientRect().right"))


def in_use(team: Any, admin: Any) -> None:
    """month-totals 1.0.0 published and activated by the team's admin (in a thread: the
    services announce through async_to_sync, tests/browser/conftest.py)."""
    def build() -> None:
        try:
            version = publish_version(team)
            asked = activation_request(team=team, version=version, user=admin)
            activation_decide(activation=asked, user=admin, approve=True)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(build).result()


def test_install_and_try_it_are_near_the_top_and_the_audit_log_names_the_plugin(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    Membership.objects.filter(user=people["reviewer"]).update(role="admin")
    in_use(people["team"], people["reviewer"])
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rob")
        page.goto(f"{server.url}marketplace/p/month-totals/")
        # Install and Try it themselves, not links to them: under the head on a phone (the
        # page below runs to thousands of pixels), beside the README on a wide screen.
        expect(page.locator("#install")).to_be_in_viewport()
        expect(page.locator("#pip-command")).to_contain_text("pip install")
        trying = page.locator("#try")
        expect(trying.get_by_role("button", name="Run in the sandbox")).to_be_visible()
        if width < 900:
            assert top(page, "#install") < 0.6 * height, top(page, "#install")
            assert bottom(page, "#try") < top(page, ".readme")  # before the README
            assert top(page, "#try") < 1.5 * height, top(page, "#try")
        else:
            expect(trying).to_be_in_viewport()
            assert left(page, "#try") > right(page, ".readme")  # beside it
        assert page.get_by_role("navigation", name="Use it").count() == 0
        accessible_and_fits(page, "a plugin's page", width)

        page.goto(f"{server.url}t/acme/audit/")
        entries = page.get_by_role("region", name="Audit entries")
        expect(entries).to_contain_text("rob activated month-totals 1.0.0.")
        expect(entries.locator(".audit-sentence", has_text="in team")).to_have_count(0)
        accessible_and_fits(page, "the audit log", width)


def test_a_two_line_question_keeps_its_title_inside_its_box_and_the_counter_holds(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rita")
        describe(page)
        expect(page.get_by_text("Pages done: 0 of 5")).to_be_visible()
        answer_actions(page)  # the task adds its questions: the total stays 5
        expect(page.get_by_text("Pages done: 1 of 5")).to_be_visible()
        page.get_by_label("What will you give it for \u201cgreet\u201d?").fill("name")
        page.get_by_label("What should you get back from \u201cgreet\u201d?").fill("message")
        continue_(page)
        expect(page.get_by_text("Pages done: 2 of 5")).to_be_visible()
        inside = page.evaluate("""() => [...document.querySelectorAll('fieldset.question')]
            .map(box => {
                const legend = box.querySelector(':scope > legend');
                const top = box.getBoundingClientRect().top
                    + parseFloat(getComputedStyle(box).borderTopWidth);
                const lines = Math.round(legend.getBoundingClientRect().height
                    / parseFloat(getComputedStyle(legend).lineHeight || 20));
                return {inside: legend.getBoundingClientRect().top >= top, lines};
            })""")
        assert inside and all(found["inside"] for found in inside), inside
        if width < 900:
            assert any(found["lines"] >= 2 for found in inside), inside  # a two-line title
        accessible_and_fits(page, "the examples page", width)
