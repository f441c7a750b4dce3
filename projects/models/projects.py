"""Projects: what a team asked for (the interview's spec) and where it stands on the board.

A project's runs, their checkpoints and approval requests belong to the runs app (runs/models.py).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Project(models.Model):
    class Status(models.TextChoices):
        INTERVIEWING = "interviewing", "Interviewing"
        QUEUED = "queued", "Queued"
        GENERATING = "generating", "Generating"
        AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
        SUCCEEDED = "succeeded", "Succeeded"
        PUBLISHED = "published", "Published"
        ESCALATED = "escalated", "Escalated"
        FAILED = "failed", "Failed"

    team = models.ForeignKey("projects.Team", on_delete=models.CASCADE, related_name="projects")
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="requested_projects"
    )
    name = models.CharField(max_length=120)
    spec = models.JSONField(default=dict, blank=True, help_text="The interview's result (spec).")
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.INTERVIEWING)
    # Position on the board's queue column; 0 once the project has left the queue.
    queue_position = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    status_changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["team", "status"], name="project_team_status")]

    def __str__(self) -> str:
        return self.name
