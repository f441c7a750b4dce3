"""Comments: people of a team talking about a request. A thread belongs to a project, a run or
an approval request (exactly one of them: the thread of a run has no approval, the project's
thread neither). Deleting keeps the row (the thread says "deleted"); the words removed and
every edit are in the audit log (projects/services/comments.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Comment(models.Model):
    team = models.ForeignKey("teams.Team", on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey("runs.Project", on_delete=models.CASCADE,
                                related_name="comments")
    run = models.ForeignKey("runs.Run", null=True, blank=True, on_delete=models.CASCADE,
                            related_name="comments")
    approval = models.ForeignKey("runs.ApprovalRequest", null=True, blank=True,
                                 on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True,
                               on_delete=models.SET_NULL, related_name="+")
    author_name = models.CharField(max_length=150, help_text="The author's username at the time.")
    body = models.TextField(blank=True, help_text="Markdown; empty once deleted.")
    # A requester's question on their run while it waits (its reviewers are told).
    is_question = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)
    deleted_by_name = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["project", "run", "approval", "created_at"],
                         name="comment_thread_time"),
        ]
        constraints = [
            # An approval's thread names its run too; a run's thread has no approval.
            models.CheckConstraint(condition=models.Q(approval__isnull=True)
                                   | models.Q(run__isnull=False),
                                   name="comment_approval_has_run"),
        ]

    def __str__(self) -> str:
        return f"comment {self.pk} by {self.author_name}"

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def thread_key(self) -> str:
        """Names the thread in pages and live events: project-1, run-2, approval-3."""
        if self.approval_id is not None:
            return f"approval-{self.approval_id}"
        if self.run_id is not None:
            return f"run-{self.run_id}"
        return f"project-{self.project_id}"
