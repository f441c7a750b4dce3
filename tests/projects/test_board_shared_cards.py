"""The board's cards shared by a team's viewers between the team's live events
(autocoder/shared_copies.py): one card query serves everyone, an announced change shows at once,
an unannounced one within the copy's age, and Redis trouble costs speed, never correctness.

Real PostgreSQL and Redis; transactional, as the portal's requests run outside a transaction.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from autocoder import realtime
from projects.selectors.board import TEAM_CARDS
from runs.models import Project
from tests.projects.portal_factories import ProjectFactory
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db(transaction=True)
S = Project.Status
CARD_QUERY = 'FROM "projects_project" LEFT OUTER JOIN "projects_interview"'


@pytest.fixture(autouse=True)
def fresh_copies(clean_redis: object) -> Iterator[None]:
    TEAM_CARDS.clear()
    yield
    TEAM_CARDS.clear()


def board(portal: Portal, user: object) -> tuple[str, int]:
    """The board's HTML as `user` sees it, and how many card queries it took."""
    with CaptureQueriesContext(connection) as queries:
        page = portal.client(user).get(reverse("board", args=["acme"]))
    assert page.status_code == 200
    return page.content.decode(), sum(CARD_QUERY in q["sql"] for q in queries.captured_queries)


def test_the_teams_viewers_share_one_card_query_until_something_happens(portal: Portal) -> None:
    ProjectFactory(team=portal.team, name="csv-cleaner", requester=portal.requester)

    first, asked = board(portal, portal.requester)
    assert "csv-cleaner" in first and asked == 1
    for viewer in (portal.reviewer, portal.admin, portal.requester):
        html, asked = board(portal, viewer)
        assert "csv-cleaner" in html and asked == 0


def test_a_move_on_the_board_shows_at_once_to_everyone(portal: Portal) -> None:
    queue = [ProjectFactory(team=portal.team, name=name, status=S.QUEUED, queue_position=i,
                            requester=portal.requester)
             for i, name in enumerate(["first-job", "second-job"], start=1)]
    before, _ = board(portal, portal.requester)
    assert before.index("first-job") < before.index("second-job")

    moved = portal.client(portal.reviewer).post(
        reverse("board_queue_move", args=["acme", queue[0].pk]), {"direction": "down"})
    assert moved.status_code == 302

    after, asked = board(portal, portal.requester)
    assert after.index("second-job") < after.index("first-job") and asked == 1


def test_an_unannounced_change_shows_once_the_copy_is_old_enough(
        portal: Portal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(TEAM_CARDS, "max_age_s", 0.5)
    project = ProjectFactory(team=portal.team, name="old-name", requester=portal.requester)
    board(portal, portal.requester)

    Project.objects.filter(pk=project.pk).update(name="new-name")  # no event: no service did it
    time.sleep(0.6)

    html, asked = board(portal, portal.requester)
    assert "new-name" in html and asked == 1


def test_without_redis_every_board_asks_the_database_and_is_right(
        portal: Portal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(realtime, "group_version", lambda group: None)  # Redis cannot say
    project = ProjectFactory(team=portal.team, name="old-name", requester=portal.requester)
    board(portal, portal.requester)
    Project.objects.filter(pk=project.pk).update(name="new-name")

    html, asked = board(portal, portal.requester)
    assert "new-name" in html and asked == 1


def test_a_version_read_from_an_unreachable_redis_says_it_cannot_tell(settings: Any) -> None:
    realtime._redis.cache_clear()
    settings.REDIS_URL = "unix:///nonexistent/redis.sock"
    try:
        started = time.monotonic()
        assert realtime.group_version(realtime.team_group(1)) is None
        assert time.monotonic() - started < 2
    finally:
        realtime._redis.cache_clear()
