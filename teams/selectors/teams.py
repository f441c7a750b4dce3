"""Reads for the projects app."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import cast

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import HttpRequest

from autocoder.compiled_queries import fetch_instances, model_columns
from teams.models import Membership, Team

_MEMO = "_autocoder_memberships"


def request_memberships(request: HttpRequest) -> list[Membership]:
    """The user's memberships with their teams (by team name), read once per request: the
    team switcher, the current team, the Reviews count and the model banner all need them."""
    memo: list[Membership] | None = getattr(request, _MEMO, None)
    if memo is None:
        user = getattr(request, "user", None)
        memo = (user_memberships(user.pk)
                if user is not None and user.is_authenticated else [])
        setattr(request, _MEMO, memo)
    return memo


def user_memberships(user_id: int) -> list[Membership]:
    """Every membership of the user with its team, by team name (compiled once per user:
    every page reads them)."""
    return with_teams(("memberships", user_id), lambda: Membership.objects.filter(
        user_id=user_id).order_by("team__name"))


def with_teams(key: Hashable, build: Callable[[], QuerySet[Membership]]) -> list[Membership]:
    """The memberships `build()` selects, each with its team, through a compiled query."""
    rows = fetch_instances(key, lambda: build().values_list(
        *model_columns(Membership), *model_columns(Team, "team__")), (Membership, Team))
    memberships = []
    for membership, team in rows:
        membership = cast(Membership, membership)
        membership.team = cast(Team, team)
        memberships.append(membership)
    return memberships


def teams_for_user(user: User | AnonymousUser) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


def team_members(team: Team) -> QuerySet[Membership]:
    return team.memberships.select_related("user").order_by("role", "user__username")
