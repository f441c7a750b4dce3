"""`Run.pending` read by the runs app: the step state whose shape the loop writes
(`Pending`, `Outcome`: autocoder/engine/pending.py, imported from below) and the few questions
the runs services ask of it.
"""

from __future__ import annotations

from typing import cast

from autocoder.engine.pending import CARRIED, Outcome, Pending, carried, with_outcome
from runs.models import Run

__all__ = ["CARRIED", "Outcome", "Pending", "pending_carried", "pending_ending",
           "pending_outcome_status", "run_pending"]


def run_pending(run: Run) -> Pending:
    """The run's pending work, typed (an empty Pending when there is none)."""
    return cast(Pending, run.pending or {})


def pending_carried(run: Run) -> Pending:
    """Only what a new iteration, or the run's end, carries over from the last one."""
    return carried(run_pending(run))


def pending_ending(carried: Pending, status: str, reason: str) -> Pending:
    """`carried` with the run's outcome set: the learn step ends the run so."""
    return with_outcome(carried, status, reason)


def pending_outcome_status(run: Run, default: str) -> str:
    """The status the run's decided outcome gives it, or `default` when none was decided."""
    outcome = run_pending(run).get("outcome")
    return outcome.get("status", default) if outcome else default
