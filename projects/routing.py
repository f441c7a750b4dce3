from __future__ import annotations

from django.urls import path

from projects import consumers

websocket_urlpatterns = [
    path("ws/teams/<slug:slug>/", consumers.TeamConsumer.as_asgi()),
    path("ws/runs/<int:pk>/", consumers.RunConsumer.as_asgi()),
]
