"""Publishing live updates to websocket groups through the Redis channel layer.

Every event also bumps its group's *version*, a counter in Redis: what the group's pages show
changed. A process that keeps something all of a team's viewers see (the board's cards) keeps it
under the version it read, so the next event makes it fetch again. Events are published once
the change is committed, and the version moves before the event leaves, so a page that
re-fetches on the event never meets the old version. See docs/operating.md, "Processes and load".
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

logger = logging.getLogger(__name__)

# Consumers implement `event_message` for this type and forward the payload as JSON.
EVENT_TYPE = "event.message"
VERSION_KEY = "autocoder:live-version:{group}"
# A version read waits at most this long: a page built without a shared copy is slower, never
# wrong, so Redis trouble costs a little speed and nothing else.
VERSION_TIMEOUT_S = 0.5


def team_group(team_id: int) -> str:
    return f"team.{team_id}"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def publish(group: str, payload: dict[str, Any]) -> None:
    """Send `payload` to every websocket in `group` (synchronous callers: services, actors)."""
    layer = get_channel_layer()
    if layer is None:
        return
    _version_bump(group)
    async_to_sync(layer.group_send)(group, {"type": EVENT_TYPE, "payload": payload})


def group_version(group: str) -> int | None:
    """How many events `group` has had (0: none yet), or None when Redis cannot say."""
    try:
        value = _redis().get(VERSION_KEY.format(group=group))
    except redis.RedisError:
        return None
    return int(value or 0)


def _version_bump(group: str) -> None:
    try:
        _redis().incr(VERSION_KEY.format(group=group))
    except redis.RedisError:  # the event's send reports the outage; a stale copy has a short TTL
        logger.warning("could not bump the live version of %s", group, exc_info=True)


@functools.cache
def _redis() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=VERSION_TIMEOUT_S,
                                socket_connect_timeout=VERSION_TIMEOUT_S)
