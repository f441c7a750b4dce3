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

PROBLEM_WORDS = {
    "identical_replies": "the model gave the same reply again",
    "no_progress": "nothing improved for several iterations",
    "repeated_error": "the same error keeps coming back",
    "test_failure_loop": "the same tests keep failing",
    "oscillation": "the code keeps flipping back to an earlier state",
}

ACTION_WORDS = {
    "reset_context": "starting again from the spec and the best code so far, without the "
                     "conversation that got stuck",
    "try_alternative": "asking for a different approach from every one tried so far",
    "escalate": "asking a person for guidance",
    "abort": "stopping the run",
}


@dataclass(frozen=True)
class EscapeDecision:
    """The escape chosen, why in plain words (what people read first), and the detector's
    technical terms (the pattern, its signature, the escapes tried) for whoever wants them."""

    action: str
    reason: str
    detail: str = ""


def choose_escape(detection: Detection, *, tried: list[tuple[str, str]], autonomy: str,
                  escalations_answered: int) -> EscapeDecision:
    """The next escape for `detection`, given the (signature, action) pairs tried in this run."""
    if autonomy not in AUTONOMY_LEVELS:
        raise ValueError(f"unknown autonomy {autonomy!r} (expected one of {AUTONOMY_LEVELS})")
    done = {action for signature, action in tried if signature == detection.signature}
    start = ESCAPES.index(_FIRST_RUNG.get(detection.type, "reset_context"))
    action = next((a for a in ESCAPES[start:] if a not in done), "abort")
    problem = problem_words(detection.type)
    tried_words = [ACTION_WORDS[a] for a in ESCAPES if a in done]
    if action == "escalate" and escalations_answered >= MAX_ANSWERED_ESCALATIONS:
        action = "abort"
        reason = (f"{problem}; a person already gave guidance {escalations_answered} times in "
                  "this run, so the run stops instead of asking again")
    else:
        reason = f"{problem}: {ACTION_WORDS[action]}"
        if tried_words:
            reason += f"; already tried for this problem: {'; '.join(tried_words)}"
        if action == "escalate" and autonomy == "full":
            reason += ("; autonomy is full, but a person is the last resort before giving up, "
                       "so the run waits for guidance")
    detail = f"loop detector: {detection.type} ({detection.signature}); escape: {action}"
    if done:
        detail += f"; escapes already tried: {', '.join(a for a in ESCAPES if a in done)}"
    return EscapeDecision(action, reason, detail)


def problem_words(kind: str) -> str:
    """A loop-detector pattern in plain words ("the same tests keep failing")."""
    return PROBLEM_WORDS.get(kind, f"the loop detector saw a pattern ({kind})")
