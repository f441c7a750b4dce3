"""Websocket URL patterns of every app, assembled for autocoder.asgi."""

from __future__ import annotations

from projects.routing import websocket_urlpatterns as project_patterns

websocket_urlpatterns = [*project_patterns]
