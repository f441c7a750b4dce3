"""Sending a run's current step again: an operator's kick, and the watchdog's re-sends of
stalled runs and of steps whose worker died."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from autocoder import durable
from autocoder.engine import loop
from runs.models import Run
from runs.services.common import RunStateError, step_queue_after_commit
from runs.services.outbox import Dispatch, enqueue_step, outbox_send, outbox_step_add

logger = logging.getLogger(__name__)


def run_kick(*, run: Run, dispatch: Dispatch | None = enqueue_step) -> Run:
    """Send the current step again (an operator's "it seems stuck"): a message lost between a
    step's commit and its send would otherwise leave the run waiting for nothing. A duplicate
    is harmless: only one delivery of a step can commit."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(id=run.id)
        if locked.status not in Run.ACTIVE:
            raise RunStateError(f"Only a queued or running run can be kicked ({locked.status}).")
        step_queue_after_commit(locked, dispatch, locked.step_token)
    return locked


def runs_stalled_kick(*, stalled_for_s: float | None = None,
                      dispatch: Dispatch = enqueue_step) -> list[int]:
    """The watchdog: send the current step again for runs whose steps stopped moving.

    A worker killed after a step's commit but before the next message went out leaves the run
    with a token no message carries; its redelivered message is stale and does nothing. A run
    that should be working but has not committed a step for longer than any step may take gets
    its current step re-sent. The guarded update makes one sweeper per run win, and a duplicate
    of a step that is in fact still running is harmless: only one delivery can commit.
    """
    limit = stalled_for_s if stalled_for_s is not None else float(
        loop.setting("ENGINE_STALL_S", 900))
    kicked = durable.stalled_sweep(
        Run.objects.filter(status__in=Run.ACTIVE).exclude(step_token=""),
        lambda stale: _resend(stale, dispatch), since="updated_at", older_than_s=limit,
        pin=["step_token"])
    if kicked:
        logger.warning("watchdog re-sent the current step of stalled runs %s", kicked)
    return kicked


def runs_orphaned_kick(*, live: set[str] | None = None,
                       dispatch: Dispatch = enqueue_step) -> list[int]:
    """The watchdog, every heartbeat interval: re-send the step of running runs whose claiming
    worker's heartbeat has expired (killed, out of memory, its machine gone).

    The broker would redeliver that worker's message only much later, so the step is sent
    again now; the guarded update (claimed_by still the dead worker) makes one sweeper win, and
    should the worker be alive after all, only one delivery of the step can commit."""
    return durable.orphans_sweep(
        Run.objects.filter(status=Run.Status.RUNNING).exclude(step_token=""),
        lambda stale: _resend(stale, dispatch), pin=["step_token"], live=live)


def _resend(stale: durable.Stale[Run], dispatch: Dispatch) -> bool:
    """Re-send the step the sweep read (`pinned` step_token) when the guarded update wins
    (one sweeper per run)."""
    token = stale.pinned["step_token"]
    with transaction.atomic():
        if not durable.release(stale.guard, updated_at=timezone.now()):
            return False
        row = outbox_step_add(stale.pk, token, 0)
    outbox_send(ids=[row.id], dispatch=dispatch)
    if stale.worker:
        logger.warning("worker %s died holding step %s of run %s; sent it again",
                       stale.worker, token, stale.pk)
    return True
