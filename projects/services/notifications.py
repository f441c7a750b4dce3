"""In-app notifications: reviewers hear about requests waiting for them, requesters about
decisions on their projects."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from autocoder import realtime
from autocoder.installation import InstallationFault
from projects.approval_rules import may_decide
from projects.models import ApprovalRequest, Membership, Notification, Team

Kind = Notification.Kind


def _publish_user_change(team_id: int, user_ids: list[int]) -> None:
    # The team's open pages re-fetch their bell; the event names who it concerns.
    payload = {"kind": "notifications.changed", "data": {"users": user_ids}}
    transaction.on_commit(lambda: realtime.publish(realtime.team_group(team_id), payload),
                          robust=True)


def notifications_approval_requested(*, approval: ApprovalRequest) -> int:
    """Notify every member who may decide `approval`. Idempotent: a second call adds nothing.
    Returns how many notifications were created."""
    project, team = approval.project, approval.project.team
    memberships = Membership.objects.filter(team=team).select_related("user")
    deciders = [m.user for m in memberships
                if may_decide(membership=m, project=project, team=team, run=approval.run)]
    message = (f"Review needed: {approval.get_kind_display().lower()} of “{project.name}” "
               f"(iteration {approval.iteration}).")
    url = reverse("approval_detail", args=[approval.pk])
    existing = set(Notification.objects.filter(approval=approval, kind=Kind.REVIEW_REQUESTED)
                   .values_list("user_id", flat=True))
    new = [Notification(user=user, team=team, kind=Kind.REVIEW_REQUESTED, message=message,
                        url=url, approval=approval)
           for user in deciders if user.pk not in existing]
    Notification.objects.bulk_create(new, ignore_conflicts=True)
    if new:
        _publish_user_change(team.pk, [n.user_id for n in new])
    return len(new)


def notifications_installation_fault(*, team: Team, fault: InstallationFault) -> int:
    """Tell the team's admins that a part of the installation holds its runs. One unread
    notice per admin and problem: fifty held runs do not make fifty notices."""
    message = str(fault)[:300]
    admins = (Membership.objects.filter(team=team, role=Membership.Role.ADMIN)
              .exclude(user__notifications__kind=Kind.INSTALLATION,
                       user__notifications__message=message,
                       user__notifications__read_at__isnull=True)
              .values_list("user_id", flat=True))
    new = [Notification(user_id=user_id, team=team, kind=Kind.INSTALLATION, message=message)
           for user_id in set(admins)]
    Notification.objects.bulk_create(new)
    if new:
        _publish_user_change(team.pk, [n.user_id for n in new])
    return len(new)


def notification_decision_send(*, approval: ApprovalRequest,
                               actor: User) -> Notification | None:
    """Tell the project's requester what was decided (not when they decided it themselves)."""
    project = approval.project
    if project.requester_id == actor.pk:
        return None
    message = (f"{actor.get_username()} decided the {approval.get_kind_display().lower()} "
               f"request of “{project.name}”: {approval.get_status_display().lower()}.")
    notification, created = Notification.objects.get_or_create(
        user_id=project.requester_id, approval=approval, kind=Kind.DECIDED,
        defaults={"team_id": project.team_id, "message": message,
                  "url": reverse("approval_detail", args=[approval.pk])})
    if created:
        _publish_user_change(project.team_id, [project.requester_id])
    return notification


def notification_mark_read(*, notification: Notification, user: User) -> bool:
    """Mark one of the user's notifications read; False when it was read already."""
    return bool(Notification.objects.filter(pk=notification.pk, user=user, read_at=None)
                .update(read_at=timezone.now()))


def notifications_mark_all_read(*, user: User) -> int:
    return Notification.objects.filter(user=user, read_at=None).update(read_at=timezone.now())
