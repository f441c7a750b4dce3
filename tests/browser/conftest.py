"""Browser tests: Playwright for Python driving Debian's Chromium against a live daphne server
on the test database, with a real in-process Dramatiq worker executing the runs.

Playwright's synchronous API keeps an asyncio loop marked as running in the main thread for as
long as the browser is open. Django refuses ORM calls under a running loop and channels refuses
async_to_sync there, so these tests run last in the session (the browser closes at the end of
the session) and allow Django's ORM in the test thread while the browser is open.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dramatiq
import pytest

from config.testing.workers import in_process_worker
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.live import LiveServer, live_asgi_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking",
                 "--disable-component-update", "--disable-gpu"]
ENGINE_SCRIPTS = Path(__file__).resolve().parents[1] / "engine" / "scripts"
BROWSER_DIR = Path(__file__).resolve().parent

# What the analyst asks in the recorded demo; the rest of the script builds the greeter plugin.
ANALYST_REPLY = json.dumps([
    {"question": "Should the greeting be formal or casual?", "priority": "essential",
     "assumption": "Casual, like \u201cHello, Ada!\u201d."},
    {"question": "Should it greet several people at once?", "priority": "nice",
     "assumption": "One person per request."},
])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the browser tests after every other test of the session (see the module docstring)."""
    in_browser = [item for item in items if BROWSER_DIR in Path(str(item.fspath)).parents]
    others = [item for item in items if item not in in_browser]
    items[:] = others + in_browser


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: docs/screenshots only when asked for (`make screenshots`), so an
    ordinary run leaves the working tree clean; otherwise pytest's own scratch directory, which
    pytest prunes (a directory made at import time was never removed)."""
    asked = os.environ.get("AUTOCODER_SCREENSHOTS_DIR")
    folder = Path(asked) if asked else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"
        print(f"\nSKIPPED browser tests: {reason}")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    try:
        yield chromium
    finally:
        chromium.close()
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def script_file(tmp_path: Path) -> Path:
    """A scripted-provider file (docs/llm.md, "The scripted provider"): the analyst's questions
    and a run that succeeds."""
    script = json.loads((ENGINE_SCRIPTS / "success.json").read_text())
    script["analyst"] = [ANALYST_REPLY]
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return path


@pytest.fixture
def server(script_file: Path, monkeypatch: pytest.MonkeyPatch,
           settings: Any) -> Iterator[LiveServer]:
    """Daphne on the test database; its LLM is the scripted provider reading `script_file`."""
    monkeypatch.setenv("LLM_PROVIDER", "scripted")
    monkeypatch.setenv("LLM_SCRIPT", str(script_file))
    settings.LLM_PROVIDER, settings.LLM_SCRIPT = "scripted", str(script_file)
    with live_asgi_server() as live:
        yield live


@pytest.fixture
def worker(clean_redis: Any) -> Iterator[dramatiq.Worker]:
    """A real Dramatiq worker in this process, consuming what the live server enqueues."""
    with in_process_worker() as running:
        yield running


@pytest.fixture
def people(transactional_db: None) -> dict[str, Any]:
    """Team "acme" with a requester (rita) and a reviewer (rob)."""
    team = TeamFactory(slug="acme", name="Acme")
    requester, reviewer = UserFactory(username="rita"), UserFactory(username="rob")
    MembershipFactory(team=team, user=requester, role="requester")
    MembershipFactory(team=team, user=reviewer, role="reviewer")
    return {"team": team, "requester": requester, "reviewer": reviewer}


@pytest.fixture
def context_factory(browser: Any) -> Iterator[Any]:
    """New browser contexts (separate cookie jars), closed after the test."""
    contexts: list[Any] = []

    def make(**options: Any) -> Any:
        context = browser.new_context(**{"viewport": {"width": 1280, "height": 900}, **options})
        context.set_default_timeout(15_000)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()
