"""Publishing live updates to websocket groups through the Redis channel layer."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

# Consumers implement `event_message` for this type and forward the payload as JSON.
EVENT_TYPE = "event.message"


def team_group(team_id: int) -> str:
    return f"team.{team_id}"


def run_group(run_id: int) -> str:
    return f"run.{run_id}"


def publish(group: str, payload: dict[str, Any]) -> None:
    """Send `payload` to every websocket in `group` (synchronous callers: services, actors)."""
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(group, {"type": EVENT_TYPE, "payload": payload})
