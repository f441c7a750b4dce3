from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from projects.selectors import teams_for_user


def teams(request: HttpRequest) -> dict[str, Any]:
    team = getattr(request, "team", None)
    return {
        "user_teams": teams_for_user(request.user) if hasattr(request, "user") else [],
        "current_team": team if team else None,
    }
