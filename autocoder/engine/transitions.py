"""What a step of the loop returns: a Transition (and the approval it may ask for).

Phases write nothing themselves: the runs app commits a transition atomically, and only if the
step is still the current one (see loop.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from autocoder.engine.pending import Pending, with_outcome
from autocoder.engine.states import Phase


@dataclass(frozen=True)
class Approval:
    kind: str
    payload: dict[str, Any]


@dataclass
class Transition:
    """What a step produced. `phase` is the next step (or the one to resume after approval)."""

    phase: str
    pending: Pending
    updates: dict[str, Any] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None
    reflection: str | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    approval: Approval | None = None
    status: str | None = None  # a final status, set only by `learn`
    notes: list[dict[str, Any]] = field(default_factory=list)


def ending(pending: Pending, status: str, reason: str) -> Transition:
    """Go to `learn`, which records lessons and then gives the run `status`."""
    return Transition(phase=Phase.LEARN, pending=with_outcome(pending, status, reason))
