"""What a step of the loop returns: a Transition (and the approval it may ask for).

Phases write nothing themselves: the runs app commits a transition atomically, and only if the
step is still the current one (see loop.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from autocoder.engine.pending import Pending, with_outcome
from autocoder.engine.states import Phase


class LoopEventRow(TypedDict):
    """A `runs.LoopEvent` row, as the loop detector or the reviewer's exchange writes it."""

    iteration: int
    type: str
    signature: str
    confidence: float
    occurrences: int
    action: str
    reason: str


class RunUpdates(TypedDict, total=False):
    """The run's own fields a step sets (runs/services/progress.py writes them)."""

    plan: str
    approaches: list[str]
    escapes_tried: list[list[str]]  # [signature, escape] pairs
    escape_in_force: str
    since_iteration: int
    lessons_written: int
    error: str
    base_note: str


@dataclass(frozen=True)
class Approval:
    kind: str
    payload: dict[str, Any]


@dataclass
class Transition:
    """What a step produced. `phase` is the next step (or the one to resume after approval)."""

    phase: str
    pending: Pending
    updates: RunUpdates = field(default_factory=lambda: RunUpdates())
    checkpoint: dict[str, Any] | None = None
    reflection: str | None = None
    events: list[LoopEventRow] = field(default_factory=list)
    approval: Approval | None = None
    status: str | None = None  # a final status, set only by `learn`
    notes: list[dict[str, object]] = field(default_factory=list)  # for run_notify


def ending(pending: Pending, status: str, reason: str) -> Transition:
    """Go to `learn`, which records lessons and then gives the run `status`."""
    return Transition(phase=Phase.LEARN, pending=with_outcome(pending, status, reason))
