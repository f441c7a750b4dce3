"""Choosing how to get out of a detected loop.

Escapes form a ladder, mildest first: reset_context -> try_alternative -> escalate -> abort.
A detection starts on the rung that suits its pattern, and an escape already tried for the same
signature in this run is never chosen again, so one persistent problem climbs the ladder and ends
in abort within four decisions: the engine never loops on its own escapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from autocoder.engine.detector import Detection
from autocoder.engine.spec import AUTONOMY_LEVELS

ESCAPES: tuple[str, ...] = ("reset_context", "try_alternative", "escalate", "abort")

# A run that already took a person's guidance this often and is stuck again gives up rather
# than asking a third time.
MAX_ANSWERED_ESCALATIONS = 2

_FIRST_RUNG = {
    # The model is repeating itself: a fresh context usually breaks the echo.
    "identical_replies": "reset_context",
    "no_progress": "reset_context",
    # The approach itself fails: more of the same context will not help.
    "repeated_error": "try_alternative",
    "test_failure_loop": "try_alternative",
    "oscillation": "try_alternative",
}

_PROBLEM = {
    "identical_replies": "the model gave the same reply again",
    "no_progress": "nothing improved for several iterations",
    "repeated_error": "the same error keeps coming back",
    "test_failure_loop": "the same tests keep failing",
    "oscillation": "the code keeps flipping back to an earlier state",
}

_ACTION = {
    "reset_context": "starting again from the spec and the best code so far, without the "
                     "conversation that got stuck",
    "try_alternative": "asking for a different approach from every one tried so far",
    "escalate": "asking a person for guidance",
    "abort": "stopping the run",
}


@dataclass(frozen=True)
class EscapeDecision:
    action: str
    reason: str


def choose_escape(detection: Detection, *, tried: list[tuple[str, str]], autonomy: str,
                  escalations_answered: int) -> EscapeDecision:
    """The next escape for `detection`, given the (signature, action) pairs tried in this run."""
    if autonomy not in AUTONOMY_LEVELS:
        raise ValueError(f"unknown autonomy {autonomy!r} (expected one of {AUTONOMY_LEVELS})")
    done = {action for signature, action in tried if signature == detection.signature}
    start = ESCAPES.index(_FIRST_RUNG.get(detection.type, "reset_context"))
    action = next((a for a in ESCAPES[start:] if a not in done), "abort")
    problem = _PROBLEM.get(detection.type, f"the loop detector saw {detection.type}")
    if action == "escalate" and escalations_answered >= MAX_ANSWERED_ESCALATIONS:
        return EscapeDecision("abort", f"{problem} ({detection.signature}); a person already "
                              f"gave guidance {escalations_answered} times in this run, so "
                              "the run stops instead of asking again")
    reason = f"{problem} ({detection.signature}): {_ACTION[action]}"
    if done:
        reason += f"; already tried for this problem: {', '.join(a for a in ESCAPES if a in done)}"
    if action == "escalate" and autonomy == "full":
        reason += ("; autonomy is full, but a person is the last resort before giving up, "
                   "so the run waits for guidance")
    return EscapeDecision(action, reason)
