"""Per-object access helpers used by every view: outsiders get 404, members lacking a role 403.

A 404 for outsiders means another team's objects are indistinguishable from missing ones.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from projects.models import Membership, Team


def membership_for(user: AbstractBaseUser | AnonymousUser, team: Team) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(team=team, user=user).first()


def get_team_for_member(user: AbstractBaseUser | AnonymousUser, slug: str) -> tuple[Team, Membership]:
    """The team with `slug` and the user's membership, or 404 when the user is not in it."""
    team = Team.objects.filter(slug=slug).first()
    membership = membership_for(user, team) if team else None
    if team is None or membership is None:
        raise Http404("No such team")
    return team, membership


def get_team_for_admin(user: AbstractBaseUser | AnonymousUser, slug: str) -> tuple[Team, Membership]:
    team, membership = get_team_for_member(user, slug)
    if not membership.is_admin:
        raise PermissionDenied("Only team admins can change team settings.")
    return team, membership
