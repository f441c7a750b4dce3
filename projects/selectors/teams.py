"""Reads for the projects app."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import HttpRequest

from projects.models import Membership, Team

_MEMO = "_autocoder_memberships"


def request_memberships(request: HttpRequest) -> list[Membership]:
    """The user's memberships with their teams (by team name), read once per request: the
    team switcher, the current team, the Reviews count and the model banner all need them."""
    memo: list[Membership] | None = getattr(request, _MEMO, None)
    if memo is None:
        user = getattr(request, "user", None)
        memo = (list(Membership.objects.filter(user=user).select_related("team")
                     .order_by("team__name"))
                if user is not None and user.is_authenticated else [])
        setattr(request, _MEMO, memo)
    return memo


def teams_for_user(user: User | AnonymousUser) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


def team_members(team: Team) -> QuerySet[Membership]:
    return team.memberships.select_related("user").order_by("role", "user__username")
