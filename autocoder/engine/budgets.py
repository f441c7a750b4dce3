"""The run's budgets as the loop checks them: iterations, tokens and wall time.

Time spent waiting for people does not count (`waited_s`). The team's money budgets are the
runs app's (runs/budgets.py).
"""

from __future__ import annotations

from django.utils import timezone

from autocoder.engine.states import RunView


def budget_exhausted(run: RunView, completed: int) -> str:
    """Why the run may not start another iteration ("" when it may)."""
    if completed >= run.max_iterations:
        return f"attempt budget exhausted: {completed} of {run.max_iterations} attempts used"
    if run.max_tokens and run.tokens_total >= run.max_tokens:
        return f"token budget exhausted: {run.tokens_total} of {run.max_tokens} tokens used"
    return wall_time_exhausted(run)


def wall_time_exhausted(run: RunView) -> str:
    if not run.started_at or not run.max_wall_s:
        return ""
    elapsed = (timezone.now() - run.started_at).total_seconds() - run.waited_s
    if elapsed <= run.max_wall_s:
        return ""
    return f"wall-time budget exhausted: {int(elapsed)}s of {run.max_wall_s}s used"
