"""Whose a schedule is: a schedule runs as its owner and tells them when it fails, so one whose
owner left the team is paused. Both the schedules (schedules.py, when one falls due) and the
calls they queue (invocations.py, when one runs) ask; this module imports neither of them.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from teams.models import Membership
from teams.services.audit import audit_record
from tools.models import Schedule


def schedule_owner_is_member(schedule: Schedule) -> bool:
    """Whether the schedule's owner is still in its team (a run never acts for, or tells,
    someone who left)."""
    return schedule.owner_id is not None and Membership.objects.filter(
        team_id=schedule.team_id, user_id=schedule.owner_id).exists()


def owner_left_reason(schedule: Schedule) -> str:
    who = schedule.owner.get_username() if schedule.owner is not None else "whoever set it up"
    return f"Paused: {who} is no longer a member of the team."[:200]


def schedule_pause(*, schedule: Schedule, reason: str, actor: User | None = None) -> bool:
    """Stop a schedule from running, saying why (a guarded update: paused once)."""
    with transaction.atomic():
        if not Schedule.objects.filter(pk=schedule.pk, enabled=True).update(
                enabled=False, paused_reason=reason):
            return False
        audit_record(actor=actor, action="tool.schedule_paused", team=schedule.team,
                     target=schedule, after={"plugin": schedule.plugin.name,
                                             "command": schedule.command, "reason": reason})
    return True


def schedule_still_owned(schedule: Schedule) -> bool:
    """True while the owner is in the team; else the schedule is paused (left by a way that
    sent no signal: the admin site, a deleted account) and False."""
    if schedule_owner_is_member(schedule):
        return True
    schedule_pause(schedule=schedule, reason=owner_left_reason(schedule))
    return False
