"""Choosing how to get out of a detected loop.

Escapes form a ladder, mildest first: reset_context -> try_alternative -> escalate -> abort.
A detection starts on the rung that suits its pattern, and an escape already tried for the same
signature in this run is never chosen again, so one persistent problem climbs the ladder and ends
in abort within four decisions: the engine never loops on its own escapes.

`after_failure` is where the loop applies the ladder once an iteration failed (after its
reflection): the detector's findings for that iteration, the escape taken, the budgets.
"""

from __future__ import annotations

from dataclasses import dataclass

from autocoder.engine.budgets import budget_exhausted
from autocoder.engine.detector import Detection, detect, snapshot
from autocoder.engine.pending import Pending
from autocoder.engine.spec import AUTONOMY_LEVELS
from autocoder.engine.states import (
    Checkpoint,
    GateKind,
    Phase,
    RunHistory,
    RunStatus,
    RunView,
)
from autocoder.engine.transitions import (
    Approval,
    LoopEventRow,
    RunUpdates,
    Transition,
    ending,
)

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
    "no_progress": "nothing improved for several attempts",
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


def after_failure(run: RunView, history: RunHistory, checkpoint: Checkpoint,
                  pending: Pending) -> Transition:
    """Where a failed iteration leads: the detector's findings at it, the strongest escape
    (abort, ask a person, start again, another approach) and the budgets; by default the
    next iteration implements the same plan."""
    decisions = loop_decisions(run, history, checkpoint.number)
    events: list[LoopEventRow] = [
        {"iteration": checkpoint.number, "type": d.type, "signature": d.signature,
         "confidence": d.confidence, "occurrences": d.occurrences,
         "action": e.action, "reason": e.reason} for d, e in decisions]
    tried = [*run.escapes_tried, *([d.signature, e.action] for d, e in decisions)]
    updates: RunUpdates = {"escapes_tried": tried}
    action, reason, detail = _strongest(decisions)
    if action == "reset_context":
        # A fresh context is judged on its own iterations; other escapes keep the window, so a
        # problem that survives them climbs the ladder instead of starting over.
        updates["since_iteration"] = checkpoint.number
    best = history.best()
    passed = best.number if best is not None and best.succeeded else 0
    transition = _route(run, action, reason, checkpoint, pending, updates, passed=passed)
    if transition.approval is not None and detail:
        transition.approval.payload["details"] = detail
    transition.events = events
    transition.notes += [{"kind": "run.loop_event", **event} for event in events]
    return transition


def loop_decisions(run: RunView, history: RunHistory,
                   number: int) -> list[tuple[Detection, EscapeDecision]]:
    """The detector's findings at iteration `number`, each with the escape chosen for it."""
    snapshots = [snapshot(it) for it in history.checkpoints()]
    tried = [(s, a) for s, a in run.escapes_tried]
    return [(d, choose_escape(d, tried=tried, autonomy=run.autonomy,
                              escalations_answered=run.escalations_answered))
            for d in detect(snapshots, since=run.since_iteration) if d.iteration == number]


def _strongest(decisions: list[tuple[Detection, EscapeDecision]]) -> tuple[str, str, str]:
    if not decisions:
        return "", "", ""
    _, escape = max(decisions, key=lambda pair: ESCAPES.index(pair[1].action))
    return escape.action, escape.reason, escape.detail


def _route(run: RunView, action: str, reason: str, checkpoint: Checkpoint, pending: Pending,
           updates: RunUpdates, *, passed: int = 0) -> Transition:
    """`passed`: an earlier iteration that passed the quality gate (0: none). There is one only
    after a reviewer sent the work back (docs/engine.md, "The reviewer model"); when the budget
    runs out on the rework, that iteration is the run's result and the publish gate decides."""
    if action == "abort":
        transition = ending(pending, RunStatus.ABORTED, f"the loop detector stopped the run: "
                                                         f"{reason}")
    elif (exhausted := budget_exhausted(run, checkpoint.number)) and passed:
        transition = ending(pending, RunStatus.SUCCEEDED,
                            f"{exhausted} while making the changes the reviewer asked for; "
                            f"attempt {passed} passed the quality gate and is the candidate")
    elif exhausted:
        transition = ending(pending, RunStatus.FAILED, exhausted)
    elif action == "escalate":
        transition = Transition(phase=Phase.PLAN, pending=pending)
        transition.approval = Approval(GateKind.ESCALATION, {
            "reason": reason, "iteration": checkpoint.number,
            "failures": checkpoint.failures, "reflection": checkpoint.reflection,
            "plan": run.plan, "earlier_approaches": run.approaches,
            "question": "The run is stuck. What should it do differently? Your answer is "
                        "given to the model as guidance.",
        })
    elif action in ("reset_context", "try_alternative"):
        transition = Transition(phase=Phase.PLAN, pending=pending)
        updates["escape_in_force"] = action
    else:
        transition = Transition(phase=Phase.IMPLEMENT, pending=pending)
    transition.updates = updates
    return transition
