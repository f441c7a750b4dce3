"""What the portal keeps around decisions: the audit log and people's notifications.

The audit log is append-only: rows are written once and never changed or removed, neither through
the ORM (save/delete/queryset refuse) nor with SQL (a database trigger refuses, see migration).
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.conf import settings
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils import timezone


class AppendOnlyError(Exception):
    """Raised on any attempt to change or remove an audit entry."""


class AuditEntryQuerySet(models.QuerySet["AuditEntry"]):
    def update(self, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("The audit log is append-only: entries cannot be updated.")

    def delete(self) -> NoReturn:
        raise AppendOnlyError("The audit log is append-only: entries cannot be deleted.")


class AuditEntry(models.Model):
    """Who did what to which object, with the state before and after."""

    # No database constraints: the log outlives the teams, users and objects it names.
    team = models.ForeignKey("teams.Team", null=True, blank=True, on_delete=models.DO_NOTHING,
                             db_constraint=False, related_name="+")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                              on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    actor_name = models.CharField(max_length=150, help_text="The actor's username at the time.")
    action = models.CharField(max_length=60)
    target_type = models.CharField(max_length=60)
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects = AuditEntryQuerySet.as_manager()

    class Meta:
        db_table = "projects_auditentry"
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["team", "-created_at"], name="audit_team_time"),
            models.Index(fields=["action"], name="audit_action"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.target_type} {self.target_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("The audit log is append-only: entries cannot be changed.")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("The audit log is append-only: entries cannot be deleted.")


class Notification(models.Model):
    class Kind(models.TextChoices):
        REVIEW_REQUESTED = "review_requested", "Review requested"
        DECIDED = "decided", "Decision made"
        # A part of the installation keeps runs from working (for the team's admins).
        INSTALLATION = "installation", "Installation problem"
        # Someone mentioned you, replied in a thread you wrote in, or asked about your run.
        COMMENT = "comment", "Comment"
        # Generation spent most of a budget (for the team's admins).
        BUDGET = "budget", "Budget"
        # A team admin invited you to their team (teams/services/invitations.py).
        INVITATION = "invitation", "Invitation"
        # A tool the team uses keeps failing (tools/services/suggestions.py).
        TOOL_FAILING = "tool_failing", "A tool keeps failing"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="notifications")
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    message = models.CharField(max_length=300)
    url = models.CharField(max_length=300, blank=True)
    # What the notice is about when a decision waits on it (a run's gate): any model, so this
    # app's schema points at nothing above it (docs/development.md, "Layers"); the target's
    # model declares the way back (runs.ApprovalRequest.notifications, which also removes the
    # notices with it).
    target_type = models.ForeignKey(ContentType, null=True, blank=True,
                                    on_delete=models.CASCADE, related_name="+")
    target_id = models.PositiveBigIntegerField(null=True, blank=True)
    target = GenericForeignKey("target_type", "target_id")
    read_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "projects_notification"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_user_unread")]
        constraints = [
            # Creating the notifications for a request twice (a redelivered event) adds nothing.
            models.UniqueConstraint(fields=["user", "target_type", "target_id", "kind"],
                                    name="unique_notification_per_target"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} for {self.user}: {self.message}"

    @property
    def is_read(self) -> bool:
        return self.read_at is not None
