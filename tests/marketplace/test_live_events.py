"""Live events about plugins over real websockets (a daphne process on the test database and
the Redis channel layer): each member's socket receives only what that member may see of the
plugin (marketplace/selectors/visibility.py). The checks are the real ones (sandbox included),
run in this process as `plugin_upload_submit` runs them; the events go through the channel
layer to the live server's consumers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.sync.client import ClientConnection

from autocoder import realtime
from marketplace.services.checking import _check_event
from teams.models import Membership
from tests.live import LiveServer, live_asgi_server
from tests.marketplace.conftest import Submit
from tests.projects.test_live import next_event, open_socket

pytestmark = pytest.mark.django_db(transaction=True)

TEAM_SOCKET = "ws/teams/acme/"
MARKER = "test.marker"


@pytest.fixture
def server(clean_redis: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    # Every event re-reads the member's role, so a role change counts from the next event
    # instead of after the re-check interval (what is checked does not change).
    monkeypatch.setenv("WEBSOCKET_MEMBERSHIP_RECHECK_S", "0")
    with live_asgi_server() as live:
        yield live


def kinds_until_marker(ws: ClientConnection, market: dict[str, Any],
                       timeout_s: float = 5.0) -> list[str]:
    """The kinds of every event the socket received before a marker sent to the whole team
    now (a group's events reach each socket in the order they were sent)."""
    realtime.publish(realtime.team_group(market["acme"].pk), {"kind": MARKER, "data": {}})
    kinds: list[str] = []
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        kind = json.loads(ws.recv(timeout=left)).get("kind")
        if kind == MARKER:
            return kinds
        kinds.append(kind)
    raise TimeoutError(f"no marker within {timeout_s}s (received {kinds})")


def test_a_private_plugins_check_reaches_its_reviewers_and_admins_not_requesters(
        server: LiveServer, market: dict[str, Any], submit: Submit) -> None:
    with open_socket(server, TEAM_SOCKET, market["requester"]) as requester, \
            open_socket(server, TEAM_SOCKET, market["reviewer"]) as reviewer, \
            open_socket(server, TEAM_SOCKET, market["admin"]) as admin:
        version = submit(user=market["admin"], visibility="private")
        for ws in (reviewer, admin):
            event = next_event(ws, "plugin_version.check", timeout_s=10)
            assert event["data"]["version"] == version.pk
            assert event["data"]["plugin"] == "word-count"
            assert "roles" not in event  # who it is meant for stays on the server
        assert "plugin_version.check" not in kinds_until_marker(requester, market)


def test_a_team_plugins_check_reaches_every_member(server: LiveServer, market: dict[str, Any],
                                                   submit: Submit) -> None:
    with open_socket(server, TEAM_SOCKET, market["requester"]) as requester:
        version = submit(user=market["requester"], visibility="team")
        event = next_event(requester, "plugin_version.check", timeout_s=10)
        assert event["data"]["version"] == version.pk


def test_a_reviewer_made_requester_stops_hearing_about_private_plugins(
        server: LiveServer, market: dict[str, Any], submit: Submit) -> None:
    version = submit(user=market["admin"], visibility="private")
    with open_socket(server, TEAM_SOCKET, market["reviewer"]) as reviewer:
        _check_event(version, step="passed")
        assert next_event(reviewer, "plugin_version.check")["data"]["version"] == version.pk
        Membership.objects.filter(user=market["reviewer"]).update(
            role=Membership.Role.REQUESTER)
        _check_event(version, step="passed")
        assert "plugin_version.check" not in kinds_until_marker(reviewer, market)
