"""Reads for the projects app."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from projects.models import Membership, Team


def teams_for_user(user: User | AnonymousUser) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


def team_members(team: Team) -> QuerySet[Membership]:
    return team.memberships.select_related("user").order_by("role", "user__username")
