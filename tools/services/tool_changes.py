"""Telling connected assistants that a team's tools changed (activated, upgraded, rolled back,
switched off, or a version disabled or enabled by the kill switch): after the commit, one Redis
message per team, which every web process's MCP server passes to its sessions and listen
streams as `notifications/tools/list_changed` (tools/mcp/server.py, docs/tools.md)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

import redis
from django.conf import settings
from django.db import transaction

logger = logging.getLogger(__name__)

CHANNEL = "autocoder:tools-changed"
TIMEOUT_S = 0.5


@functools.cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=TIMEOUT_S,
                                socket_connect_timeout=TIMEOUT_S)


def tools_changed_announce(*, team_ids: Iterable[int]) -> None:
    """Announce, once the caller's transaction commits, that these teams' tools changed. A
    Redis outage loses the notice only (an assistant's next tools/list is still right)."""
    teams = sorted(set(team_ids))
    if teams:
        transaction.on_commit(lambda: _publish(teams))


def _publish(team_ids: list[int]) -> None:
    try:
        for team_id in team_ids:
            _redis().publish(CHANNEL, str(team_id))
    except redis.RedisError:
        logger.warning("could not announce the changed tools of teams %s", team_ids,
                       exc_info=True)
