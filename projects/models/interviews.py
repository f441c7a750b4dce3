"""The interview wizard's durable state: one row per request, saved after every answer."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Interview(models.Model):
    class Step(models.TextChoices):
        DESCRIBE = "describe", "Describe"
        QUESTIONS = "questions", "Questions"
        SUMMARY = "summary", "Summary"
        STARTED = "started", "Started"

    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="interviews")
    requester = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="interviews"
    )
    # Created with the interview (status "interviewing") so the request shows on the board.
    project = models.OneToOneField(
        "runs.Project", on_delete=models.CASCADE, related_name="interview"
    )
    step = models.CharField(max_length=12, choices=Step.choices, default=Step.QUESTIONS)
    request = models.TextField(help_text="What the requester needs, in their own words.")
    # Raw answers and question flags; see projects/interview/__init__.py for the layout.
    questions = models.JSONField(default=list, blank=True)
    state = models.JSONField(default=dict, blank=True)
    analyst_rounds = models.PositiveSmallIntegerField(default=0)
    # The analyst said nothing essential is unclear (or gave up); it is not asked again.
    analyst_done = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["requester", "step"], name="interview_requester_step")]

    def __str__(self) -> str:
        return f"interview for {self.project}"

    @property
    def is_started(self) -> bool:
        return self.step == self.Step.STARTED
