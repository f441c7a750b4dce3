"""The team board, the run view and the review page in Chromium: live updates without reloading,
the queue reordered by keyboard and by dragging, and the screenshots in docs/screenshots."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from autocoder import realtime
from projects.selectors.board import queued_projects
from runs.models import Project
from teams.models import Membership
from tests.browser.pages import (
    LIVE_UPDATE_MS,
    log_in,
    same_document,
    wait_for,
    wait_until_live,
)
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


def queue(page: Page) -> list[str]:
    return page.locator("#col-queued .card-name").all_inner_texts()


def db_queue(team: Any) -> list[str]:
    return [p.name for p in queued_projects(team)]


def open_board(context_factory: Any, server: LiveServer, username: str) -> Page:
    page = context_factory().new_page()
    log_in(page, server, username)
    page.goto(f"{server.url}t/acme/board/")
    expect(page.get_by_role("heading", name="Acme board")).to_be_visible()
    wait_until_live(page)
    return page


def test_board_updates_live_and_the_queue_moves_by_keyboard_and_drag(
        server: LiveServer, demo: dict[str, Any], context_factory: Any) -> None:
    team = demo["team"]
    reviewer = open_board(context_factory, server, "rob")
    colleague = open_board(context_factory, server, "quinn")
    assert queue(reviewer) == ["meeting-notes", "crm-export", "holiday-planner"]
    expect(colleague.locator("#col-queued").get_by_role("button")).to_have_count(0)

    # Keyboard: focus "Move down" on the first card and press Enter; focus stays with it.
    # The reviewer's board shows the new order once the move is saved (the answer to the POST).
    reviewer.locator(f"#move-down-{demo['data'].queued[0].pk}").focus()
    reviewer.keyboard.press("Enter")
    expect(reviewer.locator("#col-queued .card-name").first).to_have_text("crm-export")

    # From then on, the requester's open board follows by itself, and says so in its live region.
    expect(colleague.locator("#col-queued .card-name").first).to_have_text(
        "crm-export", timeout=LIVE_UPDATE_MS)
    expect(colleague.locator("#live-status")).to_contain_text("board reordered by rob")
    assert db_queue(team) == ["crm-export", "meeting-notes", "holiday-planner"]
    focused = reviewer.evaluate("document.activeElement.id")
    assert focused == f"move-down-{demo['data'].queued[0].pk}"

    # Drag the last card to the top. The dragged card moves on the page before anything is
    # saved, so the colleague's deadline counts from the save in the database.
    reviewer.locator("#col-queued li[data-project]").last.drag_to(
        reviewer.locator("#col-queued li[data-project]").first)
    wait_for(lambda: db_queue(team)[0] == "holiday-planner", what="the drop to be saved")
    expect(colleague.locator("#col-queued .card-name").first).to_have_text(
        "holiday-planner", timeout=LIVE_UPDATE_MS)
    expect(reviewer.locator("#col-queued .card-name").first).to_have_text("holiday-planner")
    assert same_document(reviewer) and same_document(colleague)


def test_screenshots_of_the_board_run_view_and_review_page(
        server: LiveServer, demo: dict[str, Any], context_factory: Any, screenshots: Path) -> None:
    data = demo["data"]
    page = open_board(context_factory, server, "rob")
    page.set_viewport_size({"width": 1600, "height": 1000})
    expect(page.locator("#col-awaiting_approval")).to_contain_text("your review")
    page.screenshot(path=str(screenshots / "board.png"), full_page=True)

    page.goto(f"{server.url}runs/{data.run.pk}/?iteration=2&view=code")
    expect(page.locator("tr.finding").first).to_be_visible()
    page.goto(f"{server.url}runs/{data.run.pk}/?iteration=3&against=2&view=split")
    expect(page.get_by_role("heading", name="Timeline")).to_be_visible()
    expect(page.get_by_role("region", name="Side-by-side diff")).to_be_visible()
    page.screenshot(path=str(screenshots / "run-view.png"), full_page=True)

    page.goto(f"{server.url}approvals/{data.change.pk}/")
    expect(page.get_by_role("button", name="Send decision")).to_be_visible()
    page.screenshot(path=str(screenshots / "approval.png"), full_page=True)
    for name in ("board.png", "run-view.png", "approval.png"):
        assert (screenshots / name).stat().st_size > 20_000, name
    assert Project.objects.filter(team=demo["team"]).count() == 11
    assert Membership.objects.filter(team=demo["team"]).count() == 4


def test_run_page_follows_a_decision_made_elsewhere(
        server: LiveServer, demo: dict[str, Any], context_factory: Any) -> None:
    data = demo["data"]
    watcher = context_factory().new_page()
    log_in(watcher, server, "quinn")
    watcher.goto(f"{server.url}runs/{data.run.pk}/")
    expect(watcher.get_by_role("heading", name="Status: Awaiting approval")).to_be_visible()
    wait_until_live(watcher)

    reviewer = context_factory().new_page()
    log_in(reviewer, server, "rob")
    reviewer.goto(f"{server.url}approvals/{data.change.pk}/")
    reviewer.get_by_label("Approve", exact=True).check()
    reviewer.get_by_label("Comment", exact=True).fill("Good: no shell any more.")
    reviewer.get_by_role("button", name="Send decision").click()
    expect(reviewer.get_by_text("Decision saved: approved.")).to_be_visible()

    expect(watcher.get_by_role("heading", name="Status: Running")).to_be_visible(
        timeout=LIVE_UPDATE_MS)
    expect(watcher.locator(".timeline")).to_contain_text("Change request: approved by rob")
    assert same_document(watcher)


def announce(project: Project) -> None:
    """Announce a change to the project's team as the services do (from a thread of its own:
    Playwright runs an event loop in this one)."""
    sender = threading.Thread(target=realtime.publish, args=(
        realtime.team_group(project.team_id),
        {"kind": "project.updated", "data": {"project_id": project.pk}}))
    sender.start()
    sender.join()


def test_a_board_whose_socket_was_cut_catches_up_when_it_reconnects(
        server: LiveServer, demo: dict[str, Any], context_factory: Any) -> None:
    """Events sent while a socket is closed are lost; the page re-fetches once it is back."""
    page = context_factory().new_page()
    sockets: list[Any] = []

    def through_the_test(route: Any) -> None:  # the real socket, which the test can cut
        sockets.append(route)
        route.connect_to_server()

    page.route_web_socket(re.compile(r"/ws/teams/acme/$"), through_the_test)
    log_in(page, server, "rob")
    page.goto(f"{server.url}t/acme/board/")
    wait_until_live(page)
    live = page.locator("[data-live-target]")

    sockets[-1].close(code=1012)  # "service restart": the browser reconnects by itself
    expect(live).to_have_attribute("data-live", "closed")
    # A change whose event nobody hears: it is made and announced while the page has no socket.
    first = demo["data"].queued[0]
    Project.objects.filter(pk=first.pk).update(name="renamed-offline")
    announce(first)
    expect(live).to_have_attribute("data-live", "open", timeout=15_000)
    expect(page.locator("#col-queued .card-name").first).to_have_text(
        "renamed-offline", timeout=LIVE_UPDATE_MS)
    assert len(sockets) == 2 and same_document(page)
