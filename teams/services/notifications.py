"""In-app notifications (the bell): reviewers hear about requests waiting for them, requesters
about decisions, admins about the installation and budgets, people about comments.

What a run's gate says is the portal's (projects/services/notifications.py); the marketplace
and the tools send theirs through these functions too."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.urls import reverse
from django.utils import timezone

from autocoder import realtime
from autocoder.installation import InstallationFault
from teams.models import Membership, Notification, Team

Kind = Notification.Kind
MESSAGE_CHARS = Notification._meta.get_field("message").max_length or 300


def _publish_user_change(team_id: int, user_ids: list[int]) -> None:
    # The team's open pages re-fetch their bell; the event names who it concerns.
    payload = {"kind": "notifications.changed", "data": {"users": user_ids}}
    transaction.on_commit(lambda: realtime.publish(realtime.team_group(team_id), payload),
                          robust=True)


def _about(target: models.Model | None, url: str) -> dict[str, Any]:
    """The lookup of the notices about `target` (a run's gate), or else about the page `url`."""
    if target is None:
        return {"target_type": None, "url": url}
    return {"target_type": ContentType.objects.get_for_model(target), "target_id": target.pk}


def notifications_review_requested(*, team: Team, users: list[User], message: str, url: str,
                                   target: models.Model | None = None) -> int:
    """Tell `users` (who may decide it: the approval rules say who) that something waits for
    them at `url`: a run's gate (`target`) or an uploaded plugin version. Idempotent per
    user and request (for an upload: per user and page). Returns how many were created."""
    about = _about(target, url)
    existing = Notification.objects.filter(kind=Kind.REVIEW_REQUESTED, team=team, **about)
    notified = set(existing.values_list("user_id", flat=True))
    new = [Notification(user=user, team=team, kind=Kind.REVIEW_REQUESTED,
                        message=message[:MESSAGE_CHARS], url=url, target=target)
           for user in users if user.pk not in notified]
    Notification.objects.bulk_create(new, ignore_conflicts=True)
    if new:
        _publish_user_change(team.pk, [n.user_id for n in new])
    return len(new)


def notifications_review_settled(*, team_id: int, target_model: type[models.Model] | None = None,
                                 target_ids: list[int] | None = None, url: str = "") -> int:
    """A request that no longer waits (decided, or replaced by a newer one) leaves every bell
    it was in: its "Review needed" notices are marked read, so the bell counts what the
    Reviews page lists. The requests are `target_ids` of `target_model` (run gates), or else
    the page `url`. Returns how many were still unread."""
    unread = Notification.objects.filter(kind=Kind.REVIEW_REQUESTED, team_id=team_id,
                                         read_at=None)
    unread = (unread.filter(target_type=ContentType.objects.get_for_model(target_model),
                            target_id__in=target_ids or [])
              if target_model is not None else unread.filter(target_type=None, url=url))
    users = list(unread.values_list("user_id", flat=True))
    settled = unread.update(read_at=timezone.now())
    if settled:
        _publish_user_change(team_id, sorted(set(users)))
    return settled


def notifications_installation_fault(*, team: Team, fault: InstallationFault) -> int:
    """Tell the team's admins that a part of the installation holds its runs, and for the
    model the site admins too (they fix it on the Model page). One unread notice per admin
    and problem: fifty held runs do not make fifty notices."""
    message = str(fault)[:300]
    told = (Notification.objects.filter(kind=Kind.INSTALLATION, message=message,
                                        read_at__isnull=True).values_list("user_id", flat=True))
    admins = set(Membership.objects.filter(team=team, role=Membership.Role.ADMIN)
                 .values_list("user_id", flat=True))
    site_admins: set[int] = set()
    if fault.part in ("model", "model_reach"):
        site_admins = set(User.objects.filter(is_active=True, is_staff=True)
                          .values_list("id", flat=True))
    model_page = reverse("llm:model_settings")
    new = [Notification(user_id=user_id, team=team, kind=Kind.INSTALLATION, message=message,
                        url=model_page if user_id in site_admins else "")
           for user_id in (admins | site_admins) - set(told)]
    Notification.objects.bulk_create(new)
    if new:
        _publish_user_change(team.pk, [n.user_id for n in new])
    return len(new)


def notifications_budget_nearly_spent(*, team: Team, message: str, url: str) -> int:
    """Tell the team's admins that generation spent most of a budget (runs/budgets.py sends
    this once per budget level). Returns how many notifications were created."""
    admins = Membership.objects.filter(team=team, role=Membership.Role.ADMIN)
    new = [Notification(user_id=user_id, team=team, kind=Kind.BUDGET,
                        message=message[:MESSAGE_CHARS], url=url)
           for user_id in admins.values_list("user_id", flat=True)]
    Notification.objects.bulk_create(new)
    if new:
        _publish_user_change(team.pk, [n.user_id for n in new])
    return len(new)


def notifications_tool_failing(*, team: Team, message: str, url: str, quiet_days: int = 7,
                                same_as: str = "") -> int:
    """Tell the team's admins and reviewers that a tool keeps failing, with a link to ask for
    a change; not again within `quiet_days` for a link starting with `same_as` (the link
    itself by default). Returns how many were sent."""
    since = timezone.now() - timedelta(days=quiet_days)
    if Notification.objects.filter(team=team, kind=Kind.TOOL_FAILING,
                                   url__startswith=same_as or url,
                                   created_at__gte=since).exists():
        return 0
    deciders = Membership.objects.filter(team=team, role__in=[Membership.Role.ADMIN,
                                                              Membership.Role.REVIEWER])
    new = [Notification(user_id=user_id, team=team, kind=Kind.TOOL_FAILING,
                        message=message[:MESSAGE_CHARS], url=url)
           for user_id in deciders.values_list("user_id", flat=True)]
    Notification.objects.bulk_create(new)
    if new:
        _publish_user_change(team.pk, [n.user_id for n in new])
    return len(new)


def decision_message(*, actor: User, what: str, outcome: str, comment: str) -> str:
    """“rita decided the publish request of “x”: rejected. Comment: “…”” - the reviewer's own
    words included, shortened only to fit a notification (the page shows them whole)."""
    message = f"{actor.get_username()} decided {what}: {outcome}."
    words = " ".join(comment.split())
    if not words:
        return message
    room = MESSAGE_CHARS - len(message) - len(" Comment: “”")
    if len(words) > room:
        words = words[:max(room - 1, 0)].rstrip() + "…"
    return f"{message} Comment: “{words}”"


def notification_decided_send(*, user_id: int | None, team_id: int, actor: User, message: str,
                              url: str, target: models.Model | None = None
                              ) -> Notification | None:
    """Tell the author of a request (`user_id`: a project's requester, an upload's submitter)
    about its decision; nothing when they decided it themselves or are unknown. Once per
    request (for an upload: per page)."""
    if user_id is None or user_id == actor.pk:
        return None
    notification, created = Notification.objects.get_or_create(
        user_id=user_id, kind=Kind.DECIDED, **_about(target, url),
        defaults={"team_id": team_id, "message": message[:MESSAGE_CHARS], "url": url})
    if created:
        _publish_user_change(team_id, [user_id])
    return notification


def notification_mark_read(*, notification: Notification, user: User) -> bool:
    """Mark one of the user's notifications read; False when it was read already."""
    return bool(Notification.objects.filter(pk=notification.pk, user=user, read_at=None)
                .update(read_at=timezone.now()))


def notifications_mark_all_read(*, user: User) -> int:
    return Notification.objects.filter(user=user, read_at=None).update(read_at=timezone.now())


def notifications_comment_send(*, team: Team, messages: dict[int, str], url: str) -> int:
    """Tell people about a comment (`messages`: user id -> what they are told: a mention, a
    reply in a thread they wrote in, a requester's question). The caller names only members
    of `team`; members are checked again here, so nobody of another team is ever told."""
    members = set(Membership.objects.filter(team=team, user_id__in=list(messages))
                  .values_list("user_id", flat=True))
    new = [Notification(user_id=user_id, team=team, kind=Kind.COMMENT,
                        message=message[:MESSAGE_CHARS], url=url[:300])
           for user_id, message in messages.items() if user_id in members]
    Notification.objects.bulk_create(new)
    if new:
        _publish_user_change(team.pk, [n.user_id for n in new])
    return len(new)
