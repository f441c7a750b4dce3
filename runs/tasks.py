"""Dramatiq actors of the runs app: thin, they take ids and call a service."""

from __future__ import annotations

import dramatiq


# One step of a generation run: a model call or a sandbox run, so minutes at most; the step
# service counts its own attempts (worker kills included), Dramatiq retries only cover errors
# raised before that bookkeeping (a database that is briefly unavailable).
@dramatiq.actor(max_retries=2, min_backoff=2_000, time_limit=30 * 60 * 1000)
def run_step(run_id: int, token: str) -> None:
    """Perform the step of run `run_id` that `token` names, then queue the next one."""
    from runs.services.lifecycle import run_step_perform

    run_step_perform(run_id=run_id, token=token)
