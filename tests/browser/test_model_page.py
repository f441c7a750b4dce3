"""The Model page with a wrong address (issue 28, item 1), in Chromium at 1280 and 390 px: a
site admin saves an address where no model answers, is told plainly and keeps the set-up in use;
"Save anyway" stores it and the page then says the model is not working. axe finds nothing
serious and nothing scrolls sideways.

Nothing is mocked: daphne on the test database; the address is a loopback port nothing listens
on. No model comes from the environment here (as on a fresh install), so the page decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from autocoder.llm.models import SiteModelConfig
from tests.browser.pages import log_in
from tests.browser.test_tool_schedules import check
from tests.factories import UserFactory
from tests.live import LiveServer, free_port, live_asgi_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def bare_server(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[LiveServer]:
    for name in ("LLM_PROVIDER", "LLM_SCRIPT", "LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
        setattr(settings, name, "")
    with live_asgi_server() as live:
        yield live


def test_a_wrong_model_address_is_refused_then_saved_anyway_and_shown_as_not_working(
        bare_server: LiveServer, context_factory: Any, transactional_db: None) -> None:
    UserFactory(username="sam", is_staff=True, is_superuser=True)
    dead = f"http://127.0.0.1:{free_port()}/v1"
    for index, (width, height) in enumerate(((1280, 900), (390, 844))):
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, bare_server, "sam")
        page.goto(f"{bare_server.url}settings/model/")
        page.get_by_label("OpenAI-compatible", exact=False).first.check()
        page.get_by_label("Base URL").fill(dead)
        page.get_by_label("Model", exact=True).fill("coder-7b")
        page.get_by_role("button", name="Save", exact=True).click()
        expect(page.get_by_text("Not saved", exact=False).first).to_be_visible()
        expect(page.get_by_role("button", name="Save anyway")).to_be_visible()
        if index == 0:
            assert not SiteModelConfig.objects.filter(base_url=dead).exists()
        check(page, f"model page, refused save, {width} px")
        page.get_by_role("button", name="Save anyway").click()
        expect(page.get_by_text("Not working", exact=False).first).to_be_visible()
        assert SiteModelConfig.objects.get().base_url == dead
        check(page, f"model page, saved anyway, {width} px")


def test_a_long_compiler_line_stays_inside_its_box_on_a_phone(
        monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Any, context_factory: Any,
        transactional_db: None) -> None:
    """The probe's Model page was 2,409 px wide: one raw compiler line of the runner's
    install. It scrolls inside its own box now, and the page says how long the install has
    run and what to expect on this machine. The page is rendered here with the runner shown
    as not installed (this test venv has it), and laid out in Chromium with the portal's CSS."""
    import time

    from django.test import Client

    from autocoder.llm.local import progress as states
    from autocoder.llm.local import runtime

    settings.MODELS_DIR = tmp_path / "models"
    monkeypatch.setattr(runtime, "runtime_version", lambda: None)
    line = "/usr/bin/c++ -DGGML_BACKEND_SHARED " + "-I/tmp/pip-install-xyz/include " * 60
    states.write(runtime.state_path(), states.Progress(
        runtime.NAME, states.INSTALLING, percent_hint=40.0, lines=[line],
        started_at=time.time() - 7 * 60))
    client = Client()
    client.force_login(UserFactory(username="sam", is_staff=True, is_superuser=True))
    with runtime_lock_held(runtime):
        html = client.get("/settings/model/").content.decode()
    assert "Installing for 7 min" in html and "on this machine's" in html
    assert 'class="local-lines" tabindex="0"' in html
    with live_asgi_server() as server:  # serves the portal's CSS to the page below
        page = context_factory(viewport={"width": 390, "height": 844},
                               bypass_csp=True).new_page()
        page.set_content(html.replace("<head>", f'<head><base href="{server.url}">', 1))
        expect(page.locator(".local-lines").first).to_be_visible()
        check(page, "model page with a long installer line, 390 px")


def runtime_lock_held(runtime: Any) -> Any:
    """The install's lock held, as a worker holds it while installing."""
    from autocoder.llm.local.files import exclusive

    return exclusive(runtime.lock_path())
