"""Comment threads in Chromium (issue 18): a comment written on one page appears on another
open page of the same thread without a reload, what the other person is typing stays, and the
thread works on the approval page through its run's socket."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from projects.models import Comment
from teams.models import Notification
from tests.browser.pages import LIVE_UPDATE_MS, log_in, same_document, wait_until_live
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.live import LiveServer
from tests.projects import demo_data

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def demo(transactional_db: None) -> dict[str, Any]:
    team = TeamFactory(slug="acme", name="Acme")
    users = {name: UserFactory(username=name) for name in ("quinn", "colin", "rob", "alice")}
    for name, role in (("quinn", "requester"), ("colin", "requester"), ("rob", "reviewer"),
                       ("alice", "admin")):
        MembershipFactory(team=team, user=users[name], role=role)
    data = demo_data.build(team, users["quinn"], users["colin"])
    return {"team": team, "data": data, **users}


def open_page(context_factory: Any, server: LiveServer, username: str, path: str) -> Page:
    page = context_factory().new_page()
    log_in(page, server, username)
    page.goto(f"{server.url}{path}")
    wait_until_live(page)
    return page


def test_a_comment_reaches_the_other_open_pages_of_its_thread(
        server: LiveServer, demo: dict[str, Any], context_factory: Any) -> None:
    run, change = demo["data"].run, demo["data"].change
    requester = open_page(context_factory, server, "quinn", f"runs/{run.pk}/")
    reviewer = open_page(context_factory, server, "rob", f"runs/{run.pk}/")

    # The requester's run waits for a person: their box asks the reviewers; a draft is typed.
    asking = requester.locator(f"#thread-run-{run.pk}").get_by_label(
        "Ask the reviewers a question")
    asking.fill("a draft that must stay")

    thread = reviewer.locator(f"#thread-run-{run.pk}")
    thread.get_by_label("Your comment").fill("@quinn the **plan** looks fine to me")
    thread.get_by_role("button", name="Add comment").click()
    expect(thread.locator(".comment-body strong")).to_have_text("plan")
    expect(thread.get_by_label("Your comment")).to_have_value("")

    shown = requester.locator(f"#comments-run-{run.pk} .comment-body")
    expect(shown).to_contain_text("the plan looks fine to me", timeout=LIVE_UPDATE_MS)
    expect(requester.locator("#live-status")).to_contain_text("New comment by rob")
    expect(asking).to_have_value("a draft that must stay")
    assert same_document(requester) and same_document(reviewer)
    assert Notification.objects.filter(user=demo["quinn"], kind="comment").count() == 1

    # The approval page's thread follows through the run's socket.
    watcher = open_page(context_factory, server, "quinn", f"approvals/{change.pk}/")
    review = reviewer
    review.goto(f"{server.url}approvals/{change.pk}/")
    box = review.locator(f"#thread-approval-{change.pk}")
    box.get_by_label("Your comment").fill("Approving once the tests pass.")
    box.get_by_role("button", name="Add comment").click()
    expect(watcher.locator(f"#comments-approval-{change.pk}")).to_contain_text(
        "Approving once the tests pass.", timeout=LIVE_UPDATE_MS)
    assert same_document(watcher)
    assert Comment.objects.count() == 2

    # On a phone the thread fits the screen: nothing in it is wider than the page.
    watcher.set_viewport_size({"width": 360, "height": 740})
    widest = watcher.evaluate(
        "Math.max(...[...document.querySelectorAll('.comments, .comments *')]"
        ".map(e => e.getBoundingClientRect().right))")
    assert widest <= 360
