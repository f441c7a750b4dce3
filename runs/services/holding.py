"""Runs held by the installation (a broken part: the model, the sandbox, ...) and released
once that part works again; and runs held by the generation switch (paused, or manual and
waiting for Start: docs/portal.md, "Pausing generation"), released once it allows."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from autocoder.installation import InstallationFault, fault_of
from autocoder.llm.readiness import ProbeResult, model_reach_fault
from runs import signals
from runs.models import Run
from runs.services.common import new_token, run_notify, step_queue_after_commit
from runs.services.outbox import Dispatch, enqueue_step
from runs.services.project_status import project_status_follow
from teams.models import GenerationMode
from teams.selectors.generation import WORDS, generation_state

logger = logging.getLogger(__name__)


def run_hold(*, run_id: int, token: str, fault: InstallationFault) -> None:
    """Hold the run at the step `token` names: that step is performed again, from the start,
    once the broken part works. Nothing is charged to the model (no checkpoint, no detector
    event, no lesson), and the team's admins are told what to fix."""
    logger.error("run %s held: %s", run_id, fault)
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("project").filter(id=run_id).first()
        if run is not None and run.step_token == token and not run.is_terminal:
            run_hold_locked(run, fault)


def run_hold_locked(run: Run, fault: InstallationFault) -> None:
    run.status, run.held_by, run.error = Run.Status.HELD, fault.part, str(fault)
    run.step_attempts, run.waiting_since = 0, timezone.now()
    run.save()
    project_status_follow(run, queue=True)
    # The portal tells the team's admins what to fix (projects/receivers.py).
    signals.run_held.send(Run, team=run.project.team, fault=fault)
    run_notify(run, {"kind": "run.held", "part": fault.part, "headline": fault.headline})


MODEL_PARTS = frozenset({"model", "model_reach"})
# Held by the generation switch, not by a broken part (held_by names which).
PAUSED, MANUAL = "paused", "manual"
SWITCH_PARTS = frozenset({PAUSED, MANUAL})


def run_switch_hold_locked(run: Run, part: str) -> None:
    """Hold a locked run for the generation switch: `paused` before its next step (the step is
    performed from the start once generation resumes: nothing is lost or done twice), or
    `manual` before its first one, until a reviewer presses Start."""
    run.status, run.held_by = Run.Status.HELD, part
    run.error = WORDS[GenerationMode.PAUSED if part == PAUSED else GenerationMode.MANUAL]
    run.waiting_since = run.waiting_since or timezone.now()
    run.save()
    project_status_follow(run)  # it keeps its place in the team's queue
    run_notify(run, {"kind": "run.paused_by_switch" if part == PAUSED else "run.waits_for_start"})


def runs_switch_release(*, dispatch: Dispatch | None = enqueue_step) -> list[int]:
    """Runs held by the switch go on once it allows for their team: paused ones when
    generation is no longer paused, the ones waiting for Start when it is automatic again.
    Called when the switch changes and by the watchdog (a change that did not get this far)."""
    held = Run.objects.filter(status=Run.Status.HELD, held_by__in=SWITCH_PARTS).values_list(
        "id", "held_by", "project__team_id")
    modes: dict[int, str] = {}
    released = []
    for run_id, part, team_id in held:
        if team_id not in modes:
            modes[team_id] = generation_state(team_id=team_id).mode
        mode = modes[team_id]
        goes_on = (mode != GenerationMode.PAUSED if part == PAUSED
                   else mode == GenerationMode.AUTOMATIC)
        if goes_on and run_release(run_id, dispatch):
            released.append(run_id)
    return released


def runs_held_release(*, dispatch: Dispatch | None = enqueue_step) -> list[int]:
    """Let held runs go on whose broken part works again (the watchdog calls this every
    minute; saving a working model set-up calls it at once). Returns the released runs.
    A run released goes on with the step it was held at: nothing it did is redone, and the
    failed call cost nothing (no reply arrived) or is on record once."""
    held = list(Run.objects.filter(status=Run.Status.HELD).exclude(held_by__in=SWITCH_PARTS)
                .values_list("id", "held_by", "project__team_id"))
    working = {part for part in {part for _, part, _ in held}
               if part not in MODEL_PARTS and fault_of(part) is None}
    # Runs held for the model go on only once a real call to the team's models works
    # (one short call per distinct model), so an address that still fails holds nobody twice.
    seen: dict[tuple[str, ...], ProbeResult] = {}
    answering = {team_id for team_id in {team for _, part, team in held if part in MODEL_PARTS}
                 if model_reach_fault(team_id=team_id, seen=seen) is None}
    released = []
    for run_id, part, team_id in held:
        goes_on = team_id in answering if part in MODEL_PARTS else part in working
        if goes_on and run_release(run_id, dispatch):
            released.append(run_id)
    released += runs_switch_release(dispatch=dispatch)
    if released:
        logger.info("released held runs %s", released)
    return released


def run_release(run_id: int, dispatch: Dispatch | None) -> bool:
    """A held run goes on with the step it was held at (False: it was not held any more)."""
    with transaction.atomic():
        run = (Run.objects.select_for_update().select_related("project")
               .filter(id=run_id, status=Run.Status.HELD).first())
        if run is None:
            return False  # released or cancelled by someone else meanwhile
        now = timezone.now()
        if run.waiting_since and run.started_at:
            run.waited_s += (now - run.waiting_since).total_seconds()
        started = run.started_at is not None
        run.status = Run.Status.RUNNING if started else Run.Status.QUEUED
        run.held_by, run.error, run.waiting_since = "", "", None
        run.step_token, run.step_attempts = new_token(), 0
        run.save()
        project_status_follow(run)
        step_queue_after_commit(run, dispatch, run.step_token)
        run_notify(run, {"kind": "run.resumed"})
    return True
