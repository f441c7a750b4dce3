"""In Chromium: an outsider gets 404 on another team's project, and the run view's emergency stop
ends a run whose tests are hanging in the sandbox (the sandboxed process is killed too)."""

from __future__ import annotations

import re
from typing import Any

import psutil
import pytest
from playwright.sync_api import expect

from autocoder.sandbox.bwrap import SANDBOX_UID
from runs.models import Run
from runs.services import starting
from tests.browser.pages import log_in, wait_for
from tests.engine.conftest import greeter_spec, load_script
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def start_run(people: dict[str, Any], script: str) -> Run:
    """A run on the real queue (the in-process worker picks it up), as Start does."""
    project = starting.project_create(team=people["team"], requester=people["requester"],
                                      spec=greeter_spec())
    return starting.run_start(project=project, provider="scripted", script=load_script(script),
                              autonomy="full", use_lessons=False)


def sandboxed_test_runs() -> list[psutil.Process]:
    """The plugin test runs (pytest as the sandbox's user) below this process. A sandbox that a
    worker thread keeps prepared for its next run is idle and not counted."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.uids().real == SANDBOX_UID and "pytest" in child.cmdline():
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def test_an_outsider_gets_404_on_another_teams_project(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    run = start_run(people, "success")  # no worker: the run stays queued
    outsider = UserFactory(username="otto")
    MembershipFactory(team=TeamFactory(slug="elsewhere"), user=outsider, role="admin")
    page = context_factory().new_page()
    log_in(page, server, "otto")
    for path in (f"runs/{run.pk}/", "t/acme/board/"):
        response = page.goto(f"{server.url}{path}")
        assert response is not None and response.status == 404, path
        expect(page.locator("body")).not_to_contain_text("greeter")


def test_emergency_stop_on_the_run_view_cancels_a_hanging_run(
        server: LiveServer, people: dict[str, Any], worker: Any, context_factory: Any,
        settings: Any) -> None:
    settings.ENGINE_SANDBOX_TIMEOUT_S = 120  # the hang would outlast the test without the stop
    run = start_run(people, "hang_then_ok")
    page = context_factory().new_page()
    log_in(page, server, "rita")
    page.goto(f"{server.url}runs/{run.pk}/")
    wait_for(lambda: bool(sandboxed_test_runs()), timeout_s=60,
             what="the hanging tests to start in the sandbox")

    # The stop asks first (the probe's one click stopped a run for good), then says at once
    # that the run is stopping rather than "Running".
    page.get_by_text("Emergency stop…").click()
    page.get_by_role("button", name="Yes, stop the run now").click()
    expect(page.get_by_role("heading", name=re.compile("^Status: (Stopping|Cancelled)$"))) \
        .to_be_visible()
    wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.CANCELLED, timeout_s=30,
             what="the run to be cancelled")
    # What the person sees once the stop has gone through (live updates have their own tests).
    page.reload()
    expect(page.get_by_role("heading", name="Status: Cancelled")).to_be_visible()
    wait_for(lambda: sandboxed_test_runs() == [], timeout_s=10,
             what="the sandboxed process to end with the emergency stop")
