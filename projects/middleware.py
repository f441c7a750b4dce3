"""Remembers which team a user is working in (the team switcher), per session."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.utils.functional import SimpleLazyObject

from teams.models import Team
from teams.selectors import request_memberships

SESSION_KEY = "current_team_slug"


def current_team(request: HttpRequest) -> Team | None:
    teams = [membership.team for membership in request_memberships(request)]
    chosen = request.session.get(SESSION_KEY)
    return next((team for team in teams if team.slug == chosen), teams[0] if teams else None)


class CurrentTeamMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request.team = SimpleLazyObject(lambda: current_team(request))  # type: ignore[attr-defined]
        return self.get_response(request)
