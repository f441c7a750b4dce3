"""The generation loop as phases: each function performs one step of one iteration.

A phase reads the run (its plan, guidance, pending outputs of earlier phases of this iteration
and the checkpoints of earlier iterations), does the slow part (a model call, a safety scan, a
sandbox run) and returns a Transition: what to write and which phase comes next. Phases write
nothing themselves except the record of model calls, so the runs app (runs/services/) can
commit a transition atomically and only if the step is still the current one; a step that dies
before its commit is simply performed again.

The loop does not import the runs app: it reads the run, its checkpoints and its model calls
through the protocols of autocoder/engine/states.py and llm_port.py.

Iteration n: plan (first iteration, after an escape or a human's answer) -> implement ->
test_write -> gate -> sandbox -> verify (writes checkpoint n) -> reflect (on failure: reflection,
loop detector, escapes, budgets) -> plan/implement of n+1. The run ends through `learn`, which
extracts lessons before the final status is set.

This module is the loop's API for the runs app (`perform`, `Step`, `Transition`, ...). The
phases live by concern:
- steps.py: a Step and the reads every phase shares; transitions.py: what a step returns;
- writing.py: plan, implement, test_write (the models that write; plugin.toml permissions);
- checking.py: gate (the safety scan) and sandbox (the tests);
- verifying.py: verify (the checkpoint, the quality gate, whether a person must look), with
  second_opinion.py (the reviewing model's advice);
- learning.py: reflect and learn; the loop detector and its escapes are detector.py and
  escapes.py; the iteration, token and wall-time budgets are budgets.py.
"""

from __future__ import annotations

from collections.abc import Callable

from autocoder.engine.budgets import budget_exhausted, wall_time_exhausted
from autocoder.engine.change_check import base_check, base_check_due
from autocoder.engine.checking import gate_phase, sandbox_phase
from autocoder.engine.learning import learn_phase, reflect_phase
from autocoder.engine.states import Phase
from autocoder.engine.steps import Step, setting
from autocoder.engine.transitions import Approval, Transition, ending
from autocoder.engine.verifying import verify_phase
from autocoder.engine.writing import (
    implement_phase,
    manifest_permissions,
    plan_phase,
    test_write_phase,
)

__all__ = [
    "PHASES", "Approval", "Step", "Transition", "budget_exhausted", "ending",
    "manifest_permissions", "perform", "setting", "wall_time_exhausted",
]

PHASES: dict[str, Callable[[Step], Transition]] = {
    Phase.PLAN: plan_phase,
    Phase.IMPLEMENT: implement_phase,
    Phase.TEST_WRITE: test_write_phase,
    Phase.GATE: gate_phase,
    Phase.SANDBOX: sandbox_phase,
    Phase.VERIFY: verify_phase,
    Phase.REFLECT: reflect_phase,
    Phase.LEARN: learn_phase,
}


def perform(step: Step) -> Transition:
    if step.run.phase == Phase.PLAN and base_check_due(step):
        return _with_base_check(step)
    return PHASES[step.run.phase](step)


def _with_base_check(step: Step) -> Transition:
    """A change run's first plan, after its new tests ran once on the version in use: the run
    page and the plan's reviewer read whether they failed there (changing.base_check)."""
    check = base_check(step)
    transition = plan_phase(step)
    transition.pending["base_check"] = check
    transition.updates["base_note"] = check["note"]
    transition.notes.append({"kind": "run.base_check", "note": check["note"]})
    if transition.approval is not None:
        transition.approval.payload["base_check"] = check["note"]
    return transition
