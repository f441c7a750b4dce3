"""What every verb of a run's life shares: the refusal for a run in the wrong state, step
tokens, queuing the next step after the commit (through the outbox) and telling live pages.

Durability rules (docs/engine.md, "Durable runs"): a step is keyed by the run's `step_token`; a
message carrying another token is stale and does nothing, so at-least-once delivery is harmless.
A step's message is written to the outbox (StepOutbox) in the transaction that makes it due and
sent after that commit, and by the workers' watchdog should Redis be down then.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from django.db import transaction

from autocoder import realtime
from autocoder.engine import loop
from runs.models import Run
from runs.services.outbox import Dispatch, outbox_send, outbox_step_add

logger = logging.getLogger(__name__)


class RunStateError(Exception):
    """The run is not in a state that allows this action (for example, already finished)."""


def new_token() -> str:
    return uuid.uuid4().hex


def step_max_attempts() -> int:
    return int(loop.setting("ENGINE_STEP_MAX_ATTEMPTS", 3))


def step_queue_after_commit(run: Run, dispatch: Dispatch | None, token: str,
                            delay_ms: int = 0) -> None:
    """Send step `token` once the caller's transaction commits: its message is written to the
    outbox in that transaction, so a commit always carries its message, even if Redis is down
    at that moment or this process dies right after the commit."""
    if dispatch is None:
        return
    run.claimed_by = ""  # queued again: nobody holds the step until a worker claims it
    Run.objects.filter(id=run.id).update(claimed_by="")
    row = outbox_step_add(run.id, token, delay_ms)
    transaction.on_commit(lambda: outbox_send(ids=[row.id], dispatch=dispatch))


def run_notify(run: Run, *payloads: Mapping[str, object]) -> None:
    """Publish after the commit: live pages must never show state that was rolled back."""
    run_id, team_id = run.id, run.project.team_id
    base: dict[str, object] = {"run_id": run_id, "project_id": run.project_id,
                            "status": run.status, "phase": run.phase, "iteration": run.iteration}
    events = [{**base, **payload} for payload in payloads]

    def send() -> None:
        try:
            for event in events:
                realtime.publish(realtime.run_group(run_id),
                                 {"kind": event["kind"], "data": event})
            realtime.publish(realtime.team_group(team_id), {"kind": "run.updated", "data": base})
        except Exception:  # the channel layer is a convenience; the database is the truth
            logger.warning("could not publish run events for run %s", run_id, exc_info=True)

    transaction.on_commit(send)
