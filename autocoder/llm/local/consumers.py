"""The staff-only websocket of the local model panel: relays download and install progress."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.urls import path

from autocoder.llm.local.progress import GROUP

# The same close codes as projects.consumers: "log in again" and "no access".
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4404


class LocalModelsConsumer(AsyncJsonWebsocketConsumer):
    joined = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        if not user.is_staff:  # read from the session's user row: no further query needed
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.channel_layer.group_add(GROUP, self.channel_name)
        self.joined = True
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.joined:
            await self.channel_layer.group_discard(GROUP, self.channel_name)

    async def event_message(self, event: dict[str, Any]) -> None:
        await self.send_json(event["payload"])


websocket_urlpatterns = [
    path("ws/admin/local-models/", LocalModelsConsumer.as_asgi()),
]
