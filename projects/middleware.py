"""Remembers which team a user is working in (the team switcher), per session."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject

from projects.models import Team
from projects.selectors import teams_for_user

SESSION_KEY = "current_team_slug"


def current_team(request: HttpRequest) -> Team | None:
    teams = teams_for_user(request.user)
    chosen = request.session.get(SESSION_KEY)
    return (teams.filter(slug=chosen).first() if chosen else None) or teams.first()


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team = SimpleLazyObject(lambda: current_team(request))  # type: ignore[attr-defined]
        return self.get_response(request)
