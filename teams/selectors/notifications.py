"""Reads of in-app notifications."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from autocoder.compiled_queries import count_rows
from teams.models import Notification


def notifications_for(user: User | AnonymousUser, *,
                      unread_only: bool = False) -> QuerySet[Notification]:
    if not user.is_authenticated:
        return Notification.objects.none()
    notifications = (Notification.objects.filter(user=user).select_related("team")
                     .prefetch_related("target"))
    return notifications.filter(read_at=None) if unread_only else notifications


def unread_count(user: User | AnonymousUser) -> int:
    """The bell's count, on every page (compiled once per user)."""
    if not user.is_authenticated:
        return 0
    user_id = user.pk
    return count_rows(("unread", user_id), lambda: Notification.objects.filter(
        user_id=user_id, read_at=None).values("pk"))
