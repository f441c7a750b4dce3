"""Websocket URL patterns of every app, assembled for config.asgi."""

from __future__ import annotations

from autocoder.llm.local.consumers import websocket_urlpatterns as local_model_patterns
from projects.routing import websocket_urlpatterns as project_patterns

websocket_urlpatterns = [*project_patterns, *local_model_patterns]
