"""Reads of the audit log."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from teams.models import AuditEntry, Team


def audit_entries(*, team: Team, action: str = "", actor: str = "", q: str = "",
                  since: date | None = None, until: date | None = None) -> QuerySet[AuditEntry]:
    """The team's entries, newest first; `action` matches a prefix ("approval" finds every
    approval decision), `until` includes the whole day."""
    entries = AuditEntry.objects.filter(team=team)
    if action:
        entries = entries.filter(action__startswith=action)
    if actor:
        entries = entries.filter(actor_name__iexact=actor)
    if q:
        entries = entries.filter(Q(target_repr__icontains=q) | Q(target_id=q))
    if since:
        entries = entries.filter(created_at__gte=_day_start(since))
    if until:
        entries = entries.filter(created_at__lt=_day_start(until) + timedelta(days=1))
    return entries.order_by("-created_at", "-id")


def _day_start(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min))


def audit_actions(team: Team) -> list[str]:
    return list(AuditEntry.objects.filter(team=team).order_by("action")
                .values_list("action", flat=True).distinct())
