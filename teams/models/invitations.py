"""Invitations to join a team: a team admin invites a user name or e-mail address, and only the
person's acceptance makes them a member (teams/services/invitations.py).

An invitation is stored whether or not an account answers to the name (`user` is then empty
and nobody can accept it), so the team's admins learn nothing about who has an account.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from teams.models.teams import Membership

LIFETIME = timedelta(days=14)


def invitation_expiry() -> datetime:
    """When an invitation made now expires."""
    return timezone.now() + LIFETIME


class Invitation(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for an answer"
        ACCEPTED = "accepted", "Accepted"
        DECLINED = "declined", "Declined"
        WITHDRAWN = "withdrawn", "Withdrawn"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE,
                             related_name="invitations")
    # What the admin typed (a user name or an e-mail address), as they typed it.
    invited_as = models.CharField(max_length=254)
    # The account it reached; empty when none answers to `invited_as` (or it is in the team).
    # SET_NULL: the team's list stays as it was when an account is deleted.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                             on_delete=models.SET_NULL, related_name="team_invitations")
    role = models.CharField(max_length=16, choices=Membership.Role.choices,
                            default=Membership.Role.REQUESTER)
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                                   on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(default=invitation_expiry)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "projects_invitation"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "status"], name="invitation_user_status")]
        constraints = [
            # Inviting the same name again renews the open invitation instead of adding one.
            models.UniqueConstraint(Lower("invited_as"), "team",
                                    condition=models.Q(status="pending"),
                                    name="unique_pending_invitation"),
        ]

    def __str__(self) -> str:
        return f"invitation of {self.invited_as} to {self.team}"

    @property
    def is_open(self) -> bool:
        """Waiting for an answer and not expired."""
        return self.status == self.Status.PENDING and self.expires_at > timezone.now()

    @property
    def state(self) -> str:
        """In words, for the team page: expired invitations are pending ones past their date."""
        if self.status == self.Status.PENDING and not self.is_open:
            return "Expired"
        return self.get_status_display()
