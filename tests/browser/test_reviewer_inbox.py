"""The reviewer's inbox in Chromium: an uploaded plugin version reaches the reviewer's open board
(Reviews count and bell) within LIVE_UPDATE_MS of the upload, is found in Reviews and decided on
its page; a publish request is approved and published with its visibility in one step. The
requester sees who decides instead of buttons, and reads the reviewer's comment in the bell.

Nothing is mocked: daphne on the test database, Redis for the live pages and the queue, the
upload's tests run in the sandbox on an in-process Dramatiq worker.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from marketplace.models import Plugin, PluginVersion
from runs.models import Project
from tests.browser.journey import succeeded_run
from tests.browser.pages import LIVE_UPDATE_MS, log_in, wait_until_live
from tests.live import LiveServer
from tests.marketplace.conftest import plugin_tree, zip_bytes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

# ms: the upload's checks run the plugin's tests in the sandbox on a shared 2-core machine.
UPLOAD_MS = 120_000


def test_an_upload_reaches_the_reviewers_board_live_and_is_decided_from_reviews(
        server: LiveServer, worker: Any, people: dict, context_factory: Any,
        tmp_path: Path) -> None:
    reviewer = context_factory().new_page()
    log_in(reviewer, server, "rob")
    reviewer.goto(f"{server.url}t/acme/board/")
    wait_until_live(reviewer)
    expect(reviewer.locator("#nav-portal .count-pill")).to_have_count(0)

    requester = context_factory().new_page()
    log_in(requester, server, "rita")
    requester.goto(f"{server.url}marketplace/upload/")
    package = tmp_path / "word-count.zip"
    package.write_bytes(zip_bytes(plugin_tree()))
    requester.get_by_label("Package").set_input_files(str(package))
    requester.get_by_role("button", name="Check and submit").click()
    # The upload answers at once; a worker checks it and the page follows it live.
    expect(requester.get_by_text("Its checks run now")).to_be_visible()
    expect(requester.get_by_text(re.compile(r"^Checking your plugin: "))).to_be_visible()
    expect(requester.get_by_role("heading", name="Awaiting approval", exact=True)
           ).to_be_visible(timeout=UPLOAD_MS)
    # The uploader is offered no buttons that would be refused, and told who decides.
    expect(requester.get_by_role("button", name="Approve and publish")).to_have_count(0)
    expect(requester.get_by_text(
        "rob can decide this version. You will get a notification when it is decided.")
    ).to_be_visible()

    # From the moment the upload passed its checks, the reviewer's open board shows it waiting.
    expect(reviewer.get_by_label("1 waiting for you")).to_be_visible(timeout=LIVE_UPDATE_MS)
    expect(reviewer.get_by_role("link", name="Notifications, 1 unread")).to_be_visible(
        timeout=LIVE_UPDATE_MS)
    assert reviewer.evaluate("window.__sameDocument === true")  # no reload

    reviewer.get_by_role("link", name=re.compile("^Reviews")).click()
    expect(reviewer.get_by_role("heading", name="Waiting for you (1)")).to_be_visible()
    reviewer.get_by_role("link", name="Uploaded version 0.1.0").click()
    expect(reviewer.get_by_role("heading", name="Awaiting approval", exact=True)).to_be_visible()
    reviewer.get_by_label("Comment").fill("Tidy code; publishing it.")
    reviewer.get_by_role("button", name="Approve and publish").click()
    expect(reviewer.get_by_text("word-count 0.1.0: published.")).to_be_visible()
    assert PluginVersion.objects.get().status == PluginVersion.Status.PUBLISHED

    requester.goto(f"{server.url}notifications/")
    expect(requester.get_by_role("link", name=
        "rob decided version 0.1.0 of “word-count”: published. Comment: “Tidy code; publishing"
        " it.”")).to_be_visible()


def test_a_publish_request_is_approved_and_published_in_one_step(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    request = succeeded_run(people["team"], people["requester"], "word-count", "Word count")
    url = f"{server.url}approvals/{request.pk}/"

    requester = context_factory().new_page()
    log_in(requester, server, "rita")
    requester.goto(url)
    expect(requester.get_by_text(
        "rob can decide this request. You will get a notification when it is decided.")
    ).to_be_visible()
    expect(requester.get_by_role("button", name="Send decision")).to_have_count(0)

    reviewer = context_factory().new_page()
    log_in(reviewer, server, "rob")
    reviewer.goto(f"{server.url}approvals/")
    reviewer.get_by_role("link", name="Publish request (attempt 1)").click()
    expect(reviewer.get_by_label("Version")).to_have_value("0.1.0")
    reviewer.get_by_label("Approve and publish").check()
    reviewer.get_by_label("Who sees and installs it").select_option("public")
    reviewer.get_by_label("Category").select_option("text")
    reviewer.get_by_label("Comment", exact=True).fill("Good to go for everyone.")
    reviewer.get_by_role("button", name="Send decision").click()
    expect(reviewer.get_by_text("Decision saved: approved.")).to_be_visible()
    reviewer.get_by_role("link", name="word-count 0.1.0").click()
    expect(reviewer.locator(".page-head h1")).to_contain_text("word-count 0.1.0")
    expect(reviewer.locator(".page-head h1")).to_contain_text("Public")
    plugin = Plugin.objects.get()
    assert (plugin.visibility, plugin.category) == ("public", "text")
    assert Project.objects.get().status == Project.Status.PUBLISHED

    requester.goto(f"{server.url}notifications/")
    expect(requester.get_by_role("link", name=
        "rob decided the publish request of “Word count”: approved. Comment: “Good to go for"
        " everyone.”")).to_be_visible()
