"""Access helpers every page starts with: outsiders get 404, members lacking a role 403.

A 404 for outsiders means another team's objects are indistinguishable from missing ones. The
helpers for a project, run, approval, interview or comment build on these
(projects/permissions.py).
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from teams.models import Membership, Team
from teams.selectors.site import is_site_admin
from teams.selectors.teams import with_teams


def require_site_admin(user: User | AnonymousUser) -> None:
    """Pages of the whole site's settings: for anyone but a site admin they do not exist."""
    if not is_site_admin(user):
        raise Http404("No such page")


def membership_for(user: User | AnonymousUser, team: Team) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(team=team, user=user).first()


def get_team_for_member(user: User | AnonymousUser,
                        slug: str) -> tuple[Team, Membership]:
    """The team with `slug` and the user's membership, or 404 when the user is not in it
    (one query: every team page starts with it)."""
    if not user.is_authenticated:
        raise Http404("No such team")
    user_id = user.pk
    found = with_teams(("team-member", slug, user_id), lambda: Membership.objects.filter(
        team__slug=slug, user_id=user_id))
    if not found:
        raise Http404("No such team")
    return found[0].team, found[0]


def get_team_for_admin(user: User | AnonymousUser,
                       slug: str) -> tuple[Team, Membership]:
    team, membership = get_team_for_member(user, slug)
    if not membership.is_admin:
        raise PermissionDenied("Only team admins can change team settings.")
    return team, membership


def membership_or_404(user: User | AnonymousUser, team: Team) -> Membership:
    """The user's membership of `team`, or 404 when they are not in it."""
    membership = membership_for(user, team)
    if membership is None:
        raise Http404("Not found")
    return membership
