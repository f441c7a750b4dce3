"""The shape of `Run.pending`: what the current iteration's finished phases produced until its
checkpoint, plus what is carried from one iteration to the next and the run's outcome once the
loop decided it. The loop (autocoder/engine) writes most keys; the runs services read a few.

`Run.pending` is a JSONField, so these types say what is there; they check nothing at run time.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from runs.models import Run


class Outcome(TypedDict):
    """How the run ends, decided by the loop or by a reviewer; performed by the learn step."""

    status: str  # a Run.Status of Run.TERMINAL
    reason: str


class Pending(TypedDict, total=False):
    # Carried from one iteration to the next (CARRIED).
    lesson_ids: list[int]  # the lessons shown to the model
    lessons: str  # their text, as put in the prompts
    # The iteration's work, until its checkpoint.
    files: dict[str, str]  # path -> content of the candidate
    rejected: list[dict[str, Any]]  # files the model may not write, and why
    prose: str  # the model's reply around the files
    reply_hash: str
    no_code: str  # why the reply was not used (no files in it)
    safety: dict[str, Any]  # the safety gate's report
    report: dict[str, Any]  # the sandboxed tests' report
    permissions_change: dict[str, Any] | None
    second_opinion: dict[str, Any]  # the reviewing model's opinion, with its "iteration"
    # Milliseconds per phase, and "tokens", until the checkpoint takes them.
    timings: dict[str, int]
    # Set once the run's end is decided; the learn step performs it.
    outcome: Outcome


# The keys a new iteration (or the end of the run) keeps from the last one.
CARRIED = ("lesson_ids", "lessons")


def run_pending(run: Run) -> Pending:
    """The run's pending work, typed (an empty Pending when there is none)."""
    return cast(Pending, run.pending or {})


def pending_carried(run: Run) -> Pending:
    """Only what a new iteration, or the run's end, carries over from the last one."""
    return cast(Pending, {k: v for k, v in run_pending(run).items() if k in CARRIED})


def pending_ending(carried: Pending, status: str, reason: str) -> Pending:
    """`carried` with the run's outcome set: the learn step ends the run so."""
    return {**carried, "outcome": {"status": status, "reason": reason}}


def pending_outcome_status(run: Run, default: str) -> str:
    """The status the run's decided outcome gives it, or `default` when none was decided."""
    outcome = run_pending(run).get("outcome")
    return outcome.get("status", default) if outcome else default
