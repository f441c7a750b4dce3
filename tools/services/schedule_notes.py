"""Telling a schedule's owner how its runs go: once when one fails or cannot start, then not
again until one works (the `failing` flag). Both the calls (invocations.py, when a run ends)
and the sweep (schedule_runs.py, when a run cannot start) tell through here; this module
imports neither of them.
"""

from __future__ import annotations

from django.urls import reverse

from teams.services.notifications import notifications_review_requested
from tools.models import Invocation, Schedule
from tools.services.schedule_owners import schedule_owner_is_member

# The error_kind of a run the sweep could not start (missing settings, a disabled version, a
# tool no longer in use).
NOT_STARTED = "not_started"


def schedule_outcome_tell(invocation: Invocation) -> None:
    """A schedule's owner hears about a failure once, until it works again."""
    schedule = invocation.schedule
    if schedule is None:
        return
    if invocation.status == Invocation.Status.OK:
        Schedule.objects.filter(pk=schedule.pk, failing=True).update(failing=False)
        return
    if invocation.error_kind == "owner_left":
        return  # nobody to tell: the schedule is paused, and its page says why
    if not Schedule.objects.filter(pk=schedule.pk, failing=False).update(failing=True):
        return
    if schedule.owner is None or not schedule_owner_is_member(schedule):
        return  # a failure is never told to someone who left the team
    url = reverse("tools:log", args=[invocation.team.slug, invocation.plugin.normalized_name])
    # Refused (before anything of the plugin ran, here or at the call's start): it did not start.
    what = "could not start" if invocation.status == Invocation.Status.REFUSED else "failed"
    message = (f"Your schedule “{schedule.name}” of {invocation.plugin.name} {what}: "
               f"{invocation.error or invocation.get_status_display()}")
    notifications_review_requested(team=invocation.team, users=[schedule.owner],
                                   message=message, url=f"{url}?failed={invocation.pk}")
