"""Reads of team invitations: the invited person's open ones, and a team's for its admins."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.utils import timezone

from teams.models import Invitation, Team

# How long a team page keeps showing invitations that were answered, withdrawn or expired.
TEAM_PAGE_DAYS = 30


def invitations_open_for(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Invitation]:
    """The invitations `user` may still accept or decline, newest first."""
    if not user.is_authenticated:
        return Invitation.objects.none()
    return (Invitation.objects.filter(user_id=user.pk, status=Invitation.Status.PENDING,
                                      expires_at__gt=timezone.now())
            .select_related("team", "invited_by").order_by("-created_at", "-id"))


def invitation_open_for(user: AbstractBaseUser | AnonymousUser, pk: int) -> Invitation | None:
    """One of `user`'s invitations, whatever its state (None: not theirs, or no such one)."""
    if not user.is_authenticated:
        return None
    return Invitation.objects.select_related("team").filter(pk=pk, user_id=user.pk).first()


def team_invitations(team: Team) -> list[Invitation]:
    """What the team's admins see: open invitations, then those of the last TEAM_PAGE_DAYS
    that were declined or expired (accepted ones are members now; withdrawn ones are gone).
    Only what the admin typed is shown, never whether an account answered to it."""
    since = timezone.now() - timedelta(days=TEAM_PAGE_DAYS)
    rows = (Invitation.objects.filter(team=team, created_at__gte=since)
            .exclude(status__in=[Invitation.Status.ACCEPTED, Invitation.Status.WITHDRAWN])
            .select_related("invited_by").order_by("-created_at", "-id"))
    return sorted(rows, key=lambda invitation: not invitation.is_open)
