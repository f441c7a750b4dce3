"""Real websockets against a live daphne process on the test database and Redis channel layer."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings
from django.test import Client
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect

from autocoder import realtime
from autocoder.tasks import team_event_publish
from config.testing.workers import in_process_worker
from tests.live import LiveServer, live_asgi_server

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server() -> Iterator[LiveServer]:
    with live_asgi_server() as live:
        yield live


def session_cookie(user: object) -> str:
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def open_team_socket(server: LiveServer, slug: str, cookie: str | None) -> ClientConnection:
    headers = {"Origin": server.url.rstrip("/")}
    if cookie:
        headers["Cookie"] = cookie
    return connect(f"{server.ws_url}ws/teams/{slug}/", additional_headers=headers, open_timeout=10)


def test_anonymous_websocket_is_refused(server: LiveServer, team_with_roles: dict) -> None:
    with pytest.raises(InvalidStatus) as refused:
        open_team_socket(server, "acme", cookie=None)
    assert refused.value.response.status_code == 403


def test_outsider_websocket_is_refused(server: LiveServer, team_with_roles: dict) -> None:
    with pytest.raises(InvalidStatus):
        open_team_socket(server, "acme", session_cookie(team_with_roles["outsider"]))


def test_foreign_origin_is_refused(server: LiveServer, team_with_roles: dict) -> None:
    headers = {"Origin": "http://evil.example", "Cookie": session_cookie(team_with_roles["member"])}
    with pytest.raises(InvalidStatus):
        connect(f"{server.ws_url}ws/teams/acme/", additional_headers=headers, open_timeout=10)


def test_actor_message_reaches_a_members_websocket_through_redis(
    server: LiveServer, team_with_roles: dict, clean_redis: object,
) -> None:
    with in_process_worker(threads=1), open_team_socket(
            server, "acme", session_cookie(team_with_roles["member"])) as ws:
        team_event_publish.send(team_with_roles["team"].id, "run.moved", {"to": "generating"})
        message = json.loads(ws.recv(timeout=10))
    assert message == {"kind": "run.moved", "data": {"to": "generating"}}


@pytest.mark.slow
def test_an_idle_websocket_stays_open_and_still_gets_events(
    server: LiveServer, team_with_roles: dict, clean_redis: object,
) -> None:
    """A page left alone for longer than the channel layer's blocking pop keeps its socket.

    With redis-py's default 5 s read timeout the pop's own 5 s answer came too late: the
    consumer died with "Timeout reading from ...redis.sock" and the socket closed.
    """
    silence_s = RedisChannelLayer.brpop_timeout + 2
    with open_team_socket(server, "acme", session_cookie(team_with_roles["member"])) as ws:
        with pytest.raises(TimeoutError):  # not ConnectionClosed
            ws.recv(timeout=silence_s)
        realtime.publish(realtime.team_group(team_with_roles["team"].id),
                         {"kind": "board.reordered", "data": {"by": "test"}})
        message = json.loads(ws.recv(timeout=10))
    assert message == {"kind": "board.reordered", "data": {"by": "test"}}
