"""Dramatiq actors of the ground: thin, they take ids and call a service (the llm app's
are in autocoder/llm/tasks.py)."""

from __future__ import annotations

from typing import Any

import dramatiq

from autocoder import realtime


@dramatiq.actor(max_retries=3)
def team_event_publish(team_id: int, kind: str, data: dict[str, Any]) -> None:
    """Push an event to every open page of a team (used where the sender must not block)."""
    realtime.publish(realtime.team_group(team_id), {"kind": kind, "data": data})
