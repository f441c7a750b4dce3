"""The step outbox: messages that survive a Redis outage.

A message (a run's next step, or any idempotent actor's message) is written in the transaction
that makes it due and sent after the commit; what the broker did not take stays here until the
workers' watchdog gets it through. Sending twice is harmless: steps are keyed by token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.utils import timezone

from runs.models import StepOutbox

logger = logging.getLogger(__name__)

# run_id, token, delay in milliseconds
Dispatch = Callable[[int, str, int], None]


def enqueue_step(run_id: int, token: str, delay_ms: int = 0) -> None:
    """The default dispatch: one Dramatiq message for the next step (raises when the broker
    is unreachable; callers go through the outbox, which keeps the message then)."""
    from runs.tasks import run_step

    run_step.send_with_options(args=(run_id, token), delay=delay_ms or None)


def outbox_step_add(run_id: int, token: str, delay_ms: int) -> StepOutbox:
    """The message for step `token` of the run, in the caller's transaction."""
    return StepOutbox.objects.create(run_id=run_id, token=token, delay_ms=delay_ms)


def outbox_message_queue(*, actor: str, args: list[Any]) -> None:
    """Send a message to the Dramatiq actor named `actor` once the caller's transaction
    commits, through the same outbox as the steps: a commit always carries its message, even
    if Redis is down then (the watchdog sends it once Redis answers). The actor must be
    idempotent (a message may be sent twice)."""
    row = StepOutbox.objects.create(actor=actor, args=list(args))
    transaction.on_commit(lambda: outbox_send(ids=[row.id]))


def _actor_send(actor: str, args: list[Any], delay_ms: int) -> None:
    import dramatiq

    dramatiq.get_broker().get_actor(actor).send_with_options(args=tuple(args),
                                                             delay=delay_ms or None)


def outbox_send(*, ids: list[int] | None = None, dispatch: Dispatch = enqueue_step,
                limit: int = 500) -> list[int]:
    """Send the outbox's messages (those in `ids`, or all, oldest first) and delete each one
    the broker took; stop at the first failure (Redis down: the rest waits for the next try).
    A row another sender is sending is skipped, so one message goes out once. Never raises.
    Returns the runs whose step was sent."""
    rows = StepOutbox.objects.all() if ids is None else StepOutbox.objects.filter(id__in=ids)
    sent: list[int] = []
    for row_id in list(rows.order_by("id").values_list("id", flat=True)[:limit]):
        outcome = _outbox_send_one(row_id, dispatch)
        if outcome is False:
            break
        if isinstance(outcome, int):
            sent.append(outcome)
    if ids is None and sent:
        logger.info("sent %s step message(s) the outbox held, for runs %s", len(sent), sent)
    return sent


def _outbox_send_one(row_id: int, dispatch: Dispatch) -> int | bool | None:
    """The run id when a step was sent, None when someone else has the row or it was another
    actor's message, False when sending failed."""
    with transaction.atomic():
        row = StepOutbox.objects.select_for_update(skip_locked=True).filter(id=row_id).first()
        if row is None:
            return None
        waited_ms = int((timezone.now() - row.created_at).total_seconds() * 1000)
        delay_ms = max(0, row.delay_ms - waited_ms)
        try:
            if row.actor:
                _actor_send(row.actor, row.args, delay_ms)
            else:
                dispatch(int(row.run_id or 0), row.token, delay_ms)
        except Exception as error:  # the broker is down: the row stays for the next try
            logger.warning("could not send %s (%s); the outbox keeps it", row, error)
            return False
        row.delete()
        return row.run_id if not row.actor else None




def outbox_sweep() -> list[int]:
    """The watchdog's quick sweep: send everything the outbox still holds."""
    return outbox_send()
