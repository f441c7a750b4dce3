"""What a run's gate tells people: the reviewers who may decide it, the requester what was
decided. The bell itself (storing, counting, marking read) is the teams app's
(teams/services/notifications.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.urls import reverse

from runs.approval_rules import gate_deciders
from runs.models import ApprovalRequest
from teams.models import Notification
from teams.services.notifications import (
    decision_message,
    notification_decided_send,
    notifications_review_requested,
)


def notifications_approval_requested(*, approval: ApprovalRequest) -> int:
    """Notify every member who may decide `approval`. Idempotent: a second call adds nothing.
    Returns how many notifications were created."""
    project = approval.project
    message = (f"Review needed: {approval.get_kind_display().lower()} of “{project.name}” "
               f"(attempt {approval.iteration}).")
    if approval.kind == ApprovalRequest.Kind.BUDGET:
        question = (approval.payload or {}).get("question") or "Budget reached."
        message = f"“{project.name}”, run {approval.run_id}: {question}"
    return notifications_review_requested(
        team=project.team, users=gate_deciders(approval), message=message,
        url=reverse("approval_detail", args=[approval.pk]), target=approval)


def notification_decision_send(*, approval: ApprovalRequest,
                               actor: User) -> Notification | None:
    """Tell the project's requester what was decided and what the reviewer said (not when they
    decided it themselves)."""
    project = approval.project
    message = decision_message(
        actor=actor, what=f"the {approval.get_kind_display().lower()} request of “{project.name}”",
        outcome=approval.get_status_display().lower(), comment=approval.comment)
    return notification_decided_send(user_id=project.requester_id, team_id=project.team_id,
                                     actor=actor, message=message, target=approval,
                                     url=reverse("approval_detail", args=[approval.pk]))
