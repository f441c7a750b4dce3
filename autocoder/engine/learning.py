"""What the loop learns: reflect (the reflector on a failed iteration, fresh lessons for the
next one, then the loop detector's way out: escapes.after_failure) and learn (the end of a run:
lessons extracted before the final status is set).
"""

from __future__ import annotations

from autocoder.engine import lessons_port
from autocoder.engine.detector import FAILING
from autocoder.engine.escapes import after_failure
from autocoder.engine.pending import Outcome, carried
from autocoder.engine.prompting import CUT_NOTE, build_messages
from autocoder.engine.reply_formats import as_text, ask
from autocoder.engine.states import Checkpoint, Phase, RunStatus
from autocoder.engine.steps import Step, budget_chars, latest_checkpoint, prompt_context
from autocoder.engine.transitions import Transition


def reflect_phase(step: Step) -> Transition:
    run, spec = step.run, step.spec
    checkpoint = latest_checkpoint(step)
    assert checkpoint is not None, "reflect runs after a checkpoint"
    ctx = prompt_context(step, files=checkpoint.files, failures="\n\n".join(checkpoint.failures))
    ctx.iteration = checkpoint.number
    answer = ask(step.llm, "reflector", build_messages(
        "reflector", ctx, budget_chars=budget_chars(step, "reflector")))
    reflection = as_text("reflector", answer.text).strip()[:4000]
    if answer.cut:
        reflection += CUT_NOTE
    pending = carried(step.pending)
    if run.use_lessons and checkpoint.failures:
        found = lessons_port.retrieve(team_id=step.team_id,
                                      query=f"{spec.summary}\n{checkpoint.failures[0]}")
        if found.ids:
            pending["lesson_ids"], pending["lessons"] = found.ids, found.block
    transition = after_failure(run, step.history, checkpoint, pending)
    transition.reflection = reflection
    return transition


def learn_phase(step: Step) -> Transition:
    run, pending = step.run, step.pending
    outcome: Outcome = pending.get("outcome") or {"status": RunStatus.FAILED,
                                                   "reason": "no outcome"}
    written = 0
    if run.use_lessons:
        written = lessons_port.learn(run_outcome(step, outcome["status"]))
    return Transition(phase=Phase.DONE, pending=pending, status=outcome["status"],
                      updates={"lessons_written": written, "error": _error_text(outcome)})


def _error_text(outcome: Outcome) -> str:
    return "" if outcome["status"] == RunStatus.SUCCEEDED else outcome["reason"]


def run_outcome(step: Step, status: str) -> lessons_port.RunSummary:
    """What the run learned, for lessons. A run may end before its first checkpoint (a model
    call that failed for good in the first plan step): then there is nothing to reflect on."""
    run, spec = step.run, step.spec
    iterations = list(step.history.checkpoints())
    reflections = []
    for index, it in enumerate(iterations):
        following = iterations[index + 1] if index + 1 < len(iterations) else None
        fixed = following is not None and _fixed_by(it, following)
        # Without a reflection the facts still teach: what failed, and the change that fixed it.
        if it.reflection or fixed:
            reflections.append(_reflection(it, following if fixed else None))
    used = sorted({lesson for it in iterations for lesson in it.lessons_used})
    return lessons_port.RunSummary(
        team_id=step.team_id, run_id=run.id, spec_name=spec.name,
        spec_summary=spec.summary, succeeded=status == RunStatus.SUCCEEDED,
        final_approach=run.plan, final_iteration=iterations[-1].number if iterations else 0,
        reflections=reflections, lessons_used=used,
    )


def _fixed_by(it: Checkpoint, following: Checkpoint) -> bool:
    """The next iteration cleared this one's error and did better."""
    return following.error_signature != it.error_signature and (
        following.succeeded or following.pass_rate > it.pass_rate)


def _reflection(it: Checkpoint, fix: Checkpoint | None) -> lessons_port.ReflectionNote:
    """One iteration's mistake and, when the next iteration fixed it, that fix."""
    outcomes = (it.test_report or {}).get("outcomes", [])
    return lessons_port.ReflectionNote(
        # The signature goes last: lessons key a mistake by the error text's last line.
        iteration=it.number, error_text="\n".join([*it.failures, it.error_signature])[-2000:],
        failed_approach=it.plan[:2000], reflection=it.reflection, fixed_by_next=fix is not None,
        fix_summary=(fix.reply_prose or fix.diff[:1500]) if fix is not None else "",
        failing_tests=tuple(o["nodeid"] for o in outcomes if o["outcome"] in FAILING),
        fix_diff=fix.diff if fix is not None else "",
    )
