"""Run controls from the portal: pause, resume, cancel (the emergency stop) and retry.

The runs app does the work (runs.services: waiting, finishing, starting); this layer checks who
may press the button and writes the audit log.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction

from runs.models import Run
from runs.services import common, finishing, generation, starting, waiting
from teams.models import Membership
from teams.services.audit import audit_record

ACTIONS = ("pause", "resume", "cancel", "retry", "start")


class RunControlError(Exception):
    """The run is not in a state that allows this (already finished, not paused, ...)."""


def may_control(*, membership: Membership | None, run: Run) -> bool:
    """The project's requester and the team's reviewers and admins steer its runs."""
    if membership is None:
        return False
    return membership.can_review or run.project.requester_id == membership.user_id


def run_control(*, run: Run, user: User, action: str) -> Run:
    """Apply `action` to `run`; returns the run as it is now (a new run for retry)."""
    membership = Membership.objects.filter(team_id=run.project.team_id, user=user).first()
    if not may_control(membership=membership, run=run):
        raise PermissionDenied("Only the requester, reviewers and admins can control this run.")
    if action not in ACTIONS:
        raise RunControlError(f"Unknown action {action!r}.")
    if action == "start" and not (membership is not None and membership.can_review):
        raise PermissionDenied("Only the team's reviewers and admins can start a run while"
                               " generation is manual.")
    before = run.status
    try:
        with transaction.atomic():
            result = _apply(run, action, user)
            audit_record(actor=user, action=f"run.{action}", team=run.project.team, target=run,
                         before={"status": before},
                         after={"status": result.status, "run": result.pk,
                                "project": run.project.name})
    except common.RunStateError as error:
        raise RunControlError(str(error)) from error
    return result


def _apply(run: Run, action: str, user: User) -> Run:
    if action == "pause":
        return waiting.run_pause(run=run)
    if action == "resume":
        return waiting.run_resume(run=run)
    if action == "cancel":
        return finishing.run_cancel(run=run)
    if action == "start":
        return generation.run_start_press(run=run)
    return starting.run_retry(run=run, started_by=user)
