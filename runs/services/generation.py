"""The generation switch, for the site or one team (docs/portal.md, "Pausing generation"):
automatic, manual (each new run waits for a reviewer to press Start) or paused (no run takes
a new step; a step under way finishes; nothing is lost, resuming goes on where it stopped).

Saving the mode is the teams app's (teams/services/generation.py, audited); holding a run at
its next step is stepping's and starting's; this module changes the mode and lets the runs
it no longer holds go on, and presses Start on a run waiting for it."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from runs.models import Run
from runs.services.common import RunStateError
from runs.services.holding import (
    MANUAL,
    PAUSED,
    run_release,
    run_switch_hold_locked,
    runs_switch_release,
)
from runs.services.outbox import Dispatch, enqueue_step
from teams.models import GenerationMode, Team
from teams.selectors.generation import generation_state
from teams.services.generation import generation_mode_save


def generation_mode_change(*, actor: User | None, mode: str, team: Team | None = None,
                           dispatch: Dispatch | None = enqueue_step) -> list[int]:
    """Set the mode for `team` (None: every team) and let the runs it no longer holds go on;
    returns those runs' ids. ValueError for an unknown mode."""
    with transaction.atomic():
        generation_mode_save(actor=actor, mode=mode, team=team)
    return runs_switch_release(dispatch=dispatch)


def run_start_press(*, run: Run, dispatch: Dispatch | None = enqueue_step) -> Run:
    """A reviewer presses Start on a run that waits for it (manual generation). While
    generation is paused the run stays held, now for the pause, and starts on resume.
    The caller checks who may press it and audits it (projects/services/runs.py)."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project__team").get(pk=run.pk)
        if locked.status != Run.Status.HELD or locked.held_by != MANUAL:
            raise RunStateError("This run is not waiting for Start.")
        if generation_state(team=locked.project.team).mode == GenerationMode.PAUSED:
            run_switch_hold_locked(locked, PAUSED)
        else:
            run_release(locked.pk, dispatch)
    locked.refresh_from_db()
    return locked
