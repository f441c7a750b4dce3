"""Websocket consumers: thin, they check membership and relay group events.

Membership is checked when the socket opens and again before relaying events (at most every
WEBSOCKET_MEMBERSHIP_RECHECK_S seconds): someone removed from the team, by any means (the admin,
a deleted user or team), stops receiving its events within seconds and their socket is closed.

Some events are meant for some roles only (a private plugin's check: reviewers and admins; see
autocoder/realtime.py): the member's role is read with the membership, at the same interval, and
an event not meant for it is dropped here, so it never reaches the browser.
"""

from __future__ import annotations

import time
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from autocoder import metrics, realtime
from runs.models import Run
from teams.models import Membership, Team
from teams.permissions import membership_for

# Application close codes (4000-4999): clients tell "log in again" from "no access".
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4404


@database_sync_to_async
def _team_if_member(user: Any, slug: str) -> tuple[Team, str] | None:
    """The team `slug` and the user's role in it, or None for outsiders."""
    team = Team.objects.filter(slug=slug).first()
    membership = membership_for(user, team) if team else None
    return (team, membership.role) if team and membership else None


@database_sync_to_async
def _run_if_member(user: Any, run_id: int) -> tuple[Run, str] | None:
    """The run `run_id` and the user's role in its team, or None for outsiders."""
    run = Run.objects.select_related("project__team").filter(pk=run_id).first()
    membership = membership_for(user, run.project.team) if run else None
    return (run, membership.role) if run and membership else None


@database_sync_to_async
def _role_in(user_id: int, team_id: int) -> str | None:
    """The user's role in the team, or None when no longer a member."""
    return (Membership.objects.filter(team_id=team_id, user_id=user_id)
            .values_list("role", flat=True).first())


class TeamConsumer(AsyncJsonWebsocketConsumer):
    """Live events of one team (board changes, run progress summaries)."""

    group: str | None = None
    team_id: int | None = None
    role: str | None = None  # the member's team role, read again with the membership
    checked_at: float = 0.0
    kind = "team"  # the label of the open-connections metric

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        found = await _team_if_member(user, self.scope["url_route"]["kwargs"]["slug"])
        if found is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        team, role = found
        await self._join(realtime.team_group(team.id), team_id=team.id, role=role)

    async def _join(self, group: str, *, team_id: int, role: str) -> None:
        self.group, self.team_id, self.checked_at = group, team_id, time.monotonic()
        self.role = role
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
        if realtime.may_receive(event, self.role):
            await self.send_json(event["payload"])

    async def _still_member(self) -> bool:
        """Asked again (with the role) once the last answer is older than the re-check
        interval."""
        now = time.monotonic()
        if now - self.checked_at < settings.WEBSOCKET_MEMBERSHIP_RECHECK_S:
            return True
        user = self.scope.get("user")
        role = await _role_in(user.pk, self.team_id) if self.team_id and user else None
        if role is None:
            return False
        self.role, self.checked_at = role, now
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
        found = await _run_if_member(user, int(self.scope["url_route"]["kwargs"]["pk"]))
        if found is None:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        run, role = found
        await self._join(realtime.run_group(run.id), team_id=run.project.team_id, role=role)
