"""Publishing live updates to websocket groups through the Redis channel layer.

Every event also bumps its group's *version*, a counter in Redis: what the group's pages show
changed. A process that keeps something all of a team's viewers see (the board's cards) keeps it
under the version it read, so the next event makes it fetch again. Events are published once
the change is committed, and the version moves before the event leaves, so a page that
re-fetches on the event never meets the old version. See docs/operating.md, "Processes and load".

An event may be meant for some of a team's members only (a private plugin's check is news to
its team's reviewers and admins, not to requesters): `publish(..., roles=...)` names the team
roles that may receive it, and each socket's consumer drops it for anyone else
(projects/consumers.py), so an event carries to each receiver only what they may see.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Mapping
from typing import Any, NotRequired, TypedDict

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

logger = logging.getLogger(__name__)

# Consumers implement `event_message` for this type and forward the payload as JSON.
EVENT_TYPE = "event.message"
# The team roles an event is meant for (absent: everyone in the group); see `publish`.
AUDIENCE_KEY = "roles"
VERSION_KEY = "autocoder:live-version:{group}"
# A version read waits at most this long: a page built without a shared copy is slower, never
# wrong, so Redis trouble costs a little speed and nothing else.
VERSION_TIMEOUT_S = 0.5


def team_group(team_id: int) -> str:
    return f"team.{team_id}"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


class EventMessage(TypedDict):
    """The channel-layer message of an event (`roles`: AUDIENCE_KEY)."""

    type: str
    payload: Mapping[str, object]
    roles: NotRequired[list[str]]


def publish(group: str, payload: Mapping[str, object], *,
            roles: Collection[str] | None = None) -> None:
    """Send `payload` to every websocket in `group` (synchronous callers: services, actors);
    with `roles`, only to the sockets of members holding one of those team roles."""
    layer = get_channel_layer()
    if layer is None:
        return
    _version_bump(group)
    async_to_sync(layer.group_send)(group, event_message(payload, roles=roles))


def event_message(payload: Mapping[str, object], *,
                  roles: Collection[str] | None = None) -> EventMessage:
    """The channel-layer message of an event; `roles` (absent: everyone in the group) is read
    by the consumer and never sent to the browser."""
    message: EventMessage = {"type": EVENT_TYPE, "payload": payload}
    if roles is not None:
        message["roles"] = sorted(roles)  # AUDIENCE_KEY
    return message


def may_receive(message: dict[str, Any], role: str | None) -> bool:
    """Whether a member with team role `role` may receive `message` (a socket whose role is
    unknown receives only events meant for everyone)."""
    audience = message.get(AUDIENCE_KEY)
    return audience is None or role in audience


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
