"""The tools app's answers to the portal's signals (teams/signals.py): the portal sits below
the tools and imports nothing of them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.dispatch import receiver

from teams.models import Team
from teams.signals import membership_removed


@receiver(membership_removed, dispatch_uid="tools.membership_removed")
def member_left(sender: Any, team: Team, user: User, actor: User | None = None,
                **kwargs: Any) -> None:
    from tools.services.schedules import schedules_owner_left

    schedules_owner_left(team=team, user=user, actor=actor)
