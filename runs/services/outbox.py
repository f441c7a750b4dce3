"""The step outbox: messages that survive a Redis outage.

A message (a run's next step, or any idempotent actor's message) is written in the transaction
that makes it due and sent after the commit; what the broker did not take stays here until the
workers' watchdog gets it through. Sending twice is harmless: steps are keyed by token.

The mechanism is the ground layer's (autocoder/durable.py), on this app's table (StepOutbox,
registered in runs/apps.py); here are the step rows, which name no actor, and their sending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from autocoder import durable
from runs.models import StepOutbox

logger = logging.getLogger(__name__)

# run_id, token, delay in milliseconds
Dispatch = Callable[[int, str, int], None]

# The actor that performs a step (declared in runs/tasks.py under this name). Steps are sent by
# name through the broker, so the services never import the actors that call them.
STEP_ACTOR = "run_step"


def enqueue_step(run_id: int, token: str, delay_ms: int = 0) -> None:
    """The default dispatch: one Dramatiq message for the next step (raises when the broker
    is unreachable; callers go through the outbox, which keeps the message then)."""
    durable.actor_send(STEP_ACTOR, [run_id, token], delay_ms)


def outbox_step_add(run_id: int, token: str, delay_ms: int) -> StepOutbox:
    """The message for step `token` of the run, in the caller's transaction."""
    return StepOutbox.objects.create(run_id=run_id, token=token, delay_ms=delay_ms)


def step_deliver(row: StepOutbox, delay_ms: int) -> None:
    """How the outbox (autocoder/durable.py, registered in runs/apps.py) sends a step row,
    which names no actor: as the run's next step."""
    enqueue_step(int(row.run_id or 0), row.token, delay_ms)


def outbox_send(*, ids: list[int] | None = None, dispatch: Dispatch | None = None,
                limit: int = 500) -> list[int]:
    """Send the outbox's messages (those in `ids`, or all, oldest first) through the ground
    outbox (autocoder/durable.py: stops at the first failure, skips a row another sender has,
    never raises); `dispatch` sends the step rows (default: enqueue_step). Returns the runs
    whose step was sent."""
    send = dispatch or enqueue_step

    def deliver(row: StepOutbox, delay_ms: int) -> None:
        send(int(row.run_id or 0), row.token, delay_ms)

    sent = [row.run_id for row in durable.outbox_send(ids=ids, deliver=deliver, limit=limit)
            if not row.actor]
    if ids is None and sent:
        logger.info("sent %s step message(s) the outbox held, for runs %s", len(sent), sent)
    return sent


def outbox_sweep() -> list[int]:
    """The watchdog's quick sweep: send everything the outbox still holds."""
    return outbox_send()
