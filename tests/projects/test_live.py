"""Live updates over real websockets: a daphne process on the test database and the Redis
channel layer; the changes are made through the ordinary views and services."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from autocoder import realtime
from runs.approval_rules import approval_candidate
from runs.models import Project, Run
from tests.live import LiveServer, live_asgi_server
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(clean_redis: object) -> Iterator[LiveServer]:
    with live_asgi_server() as live:
        yield live


def cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def open_socket(server: LiveServer, path: str, user: Any | None) -> ClientConnection:
    headers = {"Origin": server.url.rstrip("/")}
    if user is not None:
        headers["Cookie"] = cookie(user)
    return connect(f"{server.ws_url}{path}", additional_headers=headers, open_timeout=10)


def next_event(ws: ClientConnection, kind: str, timeout_s: float = 1.0) -> dict[str, Any]:
    """The first event of `kind` within `timeout_s` (the board's promise: within a second)."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        event = json.loads(ws.recv(timeout=left))
        if event.get("kind") == kind:
            return event
    raise TimeoutError(f"no {kind} event within {timeout_s}s")


@pytest.fixture
def run(portal: Portal) -> Run:
    project = ProjectFactory(team=portal.team, requester=portal.requester, name="pdf-merger",
                             status=Project.Status.AWAITING_APPROVAL)
    return run_with_history(project=project, status=Run.Status.AWAITING_APPROVAL)


def test_run_socket_refuses_anonymous_and_outsiders(server: LiveServer, portal: Portal,
                                                    run: Run) -> None:
    with pytest.raises(InvalidStatus):
        open_socket(server, f"ws/runs/{run.pk}/", None)
    with pytest.raises(InvalidStatus):
        open_socket(server, f"ws/runs/{run.pk}/", portal.outsider)
    with pytest.raises(InvalidStatus):
        open_socket(server, "ws/runs/999999/", portal.admin)


def test_run_socket_relays_the_runs_events_to_members(server: LiveServer, portal: Portal,
                                                      run: Run) -> None:
    with open_socket(server, f"ws/runs/{run.pk}/", portal.colleague) as ws:
        realtime.publish(realtime.run_group(run.pk), {"kind": "run.step", "data": {"done": "plan"}})
        assert next_event(ws, "run.step") == {"kind": "run.step", "data": {"done": "plan"}}


def test_a_decision_reaches_the_run_page_and_the_board_within_a_second(
        server: LiveServer, portal: Portal, run: Run) -> None:
    approval = approval_for(run)
    with open_socket(server, f"ws/runs/{run.pk}/", portal.requester) as run_ws, \
            open_socket(server, "ws/teams/acme/", portal.colleague) as team_ws:
        reviewer = Client()
        reviewer.force_login(portal.reviewer)
        response = reviewer.post(reverse("approval_decide", args=[approval.pk]), {
            "decision": "approve", "candidate": approval_candidate(approval), "comment": ""})
        assert response.status_code == 302
        decided = next_event(run_ws, "run.approval_decided")
        assert decided["data"]["approval_id"] == approval.pk
        assert decided["data"]["decision"] == "approved"
        moved = next_event(team_ws, "run.updated")
        assert moved["data"]["run_id"] == run.pk and moved["data"]["status"] == "running"


def test_reordering_the_queue_reaches_colleagues_within_a_second(server: LiveServer,
                                                                 portal: Portal) -> None:
    _, second = (ProjectFactory(team=portal.team, name=n, status=Project.Status.QUEUED,
                                    queue_position=i) for i, n in enumerate(["a", "b"], 1))
    with open_socket(server, "ws/teams/acme/", portal.requester) as ws:
        admin = Client()
        admin.force_login(portal.admin)
        admin.post(reverse("board_queue_move", args=["acme", second.pk]), {"direction": "up"})
        event = next_event(ws, "board.reordered")
    assert event["data"] == {"project": second.pk, "name": "b", "position": 1, "by": "alice"}
