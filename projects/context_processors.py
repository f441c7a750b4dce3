from __future__ import annotations

from django.http import HttpRequest

from teams.selectors import request_memberships


def teams(request: HttpRequest) -> dict[str, object]:
    team = getattr(request, "team", None)
    return {
        "user_teams": [membership.team for membership in request_memberships(request)],
        "current_team": team if team else None,
    }
