"""Dramatiq actors of the runs app: thin, they take ids and call a service."""

from __future__ import annotations

import logging

import dramatiq
from django.db import DatabaseError

from autocoder.database.outage import describe, is_outage
from runs.services.outbox import STEP_ACTOR

logger = logging.getLogger(__name__)

# A step that met a database outage committed nothing; its message is tried again every 2-5 s
# for about ten minutes (then the stall watchdog, ENGINE_STALL_S, sends it again). Two retries,
# as for any other error, were over within 15 s: after a longer outage the step's message was
# gone and its run stood still until that watchdog, 15 minutes later.
OUTAGE_RETRIES = 150
OTHER_RETRIES = 2


def step_retry_when(retries: int, error: BaseException) -> bool:
    return retries < (OUTAGE_RETRIES if is_outage(error) else OTHER_RETRIES)


# One step of a generation run: a model call or a sandbox run, so minutes at most; the step
# service counts its own attempts (worker kills included), Dramatiq retries only cover errors
# raised before that bookkeeping or while the database does not answer.
@dramatiq.actor(actor_name=STEP_ACTOR, retry_when=step_retry_when, min_backoff=2_000,
                max_backoff=5_000, time_limit=30 * 60 * 1000)
def run_step(run_id: int, token: str) -> None:
    """Perform the step of run `run_id` that `token` names, then queue the next one."""
    from runs.services.stepping import run_step_perform

    try:
        run_step_perform(run_id=run_id, token=token)
    except DatabaseError as error:
        if not is_outage(error):
            raise
        # One line, not a traceback every few seconds for as long as the outage lasts.
        logger.warning("step %s of run %s: %s; trying again", token, run_id, describe(error))
        raise dramatiq.Retry() from error
