"""Websocket consumers: thin, they check membership and relay group events.

Membership is checked when the socket opens and again before relaying events (at most every
WEBSOCKET_MEMBERSHIP_RECHECK_S seconds): someone removed from the team, by any means (the admin,
a deleted user or team), stops receiving its events within seconds and their socket is closed.
"""

from __future__ import annotations

import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from autocoder import metrics, realtime
from projects.models import Membership, Team
from projects.permissions import membership_for
from runs.models import Run

# Application close codes (4000-4999): clients tell "log in again" from "no access".
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4404


@database_sync_to_async
def _team_if_member(user: Any, slug: str) -> Team | None:
    team = Team.objects.filter(slug=slug).first()
    return team if team and membership_for(user, team) else None


@database_sync_to_async
def _run_if_member(user: Any, run_id: int) -> Run | None:
    run = Run.objects.select_related("project__team").filter(pk=run_id).first()
    return run if run and membership_for(user, run.project.team) else None


@database_sync_to_async
def _is_member(user_id: int, team_id: int) -> bool:
    return Membership.objects.filter(team_id=team_id, user_id=user_id).exists()


class TeamConsumer(AsyncJsonWebsocketConsumer):
    """Live events of one team (board changes, run progress summaries)."""

    group: str | None = None
    team_id: int | None = None
    checked_at: float = 0.0
    kind = "team"  # the label of the open-connections metric

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        team = await _team_if_member(user, self.scope["url_route"]["kwargs"]["slug"])
        if team is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self._join(realtime.team_group(team.id), team_id=team.id)

    async def _join(self, group: str, *, team_id: int) -> None:
        self.group, self.team_id, self.checked_at = group, team_id, time.monotonic()
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        metrics.WEBSOCKETS.labels(kind=self.kind).inc()

    async def disconnect(self, code: int) -> None:
        if self.group:
            metrics.WEBSOCKETS.labels(kind=self.kind).dec()
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def event_message(self, event: dict[str, Any]) -> None:
        if self.team_id is None:  # no longer a member: closing, nothing more is relayed
            return
        if not await self._still_member():
            self.team_id = None
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.send_json(event["payload"])

    async def _still_member(self) -> bool:
        """Asked again once the last answer is older than the re-check interval."""
        now = time.monotonic()
        if now - self.checked_at < settings.WEBSOCKET_MEMBERSHIP_RECHECK_S:
            return True
        user = self.scope.get("user")
        if self.team_id is None or user is None or not await _is_member(user.pk, self.team_id):
            return False
        self.checked_at = now
        return True


class RunConsumer(TeamConsumer):
    """Live events of one run (phases, iterations, loop events, approvals), for its team's
    members; relaying and leaving work as for the team."""

    kind = "run"

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        run = await _run_if_member(user, int(self.scope["url_route"]["kwargs"]["pk"]))
        if run is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self._join(realtime.run_group(run.id), team_id=run.project.team_id)
