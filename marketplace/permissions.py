"""Access checks of the marketplace's writes: a PermissionDenied for a user lacking the role."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied

from marketplace.selectors.visibility import viewer_for
from teams.models import Team


def require_member(user: User, team: Team) -> None:
    if team.id not in viewer_for(user).member_of:
        raise PermissionDenied(f"You are not a member of team {team.slug}.")


def require_reviewer(user: User, team: Team) -> None:
    if not viewer_for(user).can_review(team.id):
        raise PermissionDenied("Only the team's reviewers and admins can do this.")
