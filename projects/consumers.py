"""Websocket consumers: thin, they check membership and relay group events."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from autocoder import realtime
from projects.models import Run, Team
from projects.permissions import membership_for

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


class TeamConsumer(AsyncJsonWebsocketConsumer):
    """Live events of one team (board changes, run progress summaries)."""

    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        team = await _team_if_member(user, self.scope["url_route"]["kwargs"]["slug"])
        if team is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = realtime.team_group(team.id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def event_message(self, event: dict[str, Any]) -> None:
        await self.send_json(event["payload"])


class RunConsumer(TeamConsumer):
    """Live events of one run (phases, iterations, loop events, approvals), for its team's
    members; relaying and leaving work as for the team."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        run = await _run_if_member(user, int(self.scope["url_route"]["kwargs"]["pk"]))
        if run is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.group = realtime.run_group(run.id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
