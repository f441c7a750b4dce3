"""Committing a step's result: its checkpoint (a new iteration), reflection, loop events and
timings, the next phase and token, and what the run does next (go on, wait, finish), all under
the run's row lock with the next message in the outbox."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from autocoder.engine import loop
from runs import budgets, signals
from runs.llm_calls import (
    RunLLM,
)
from runs.models import Iteration, LoopEvent, Run
from runs.services.common import new_token, run_notify, step_queue_after_commit
from runs.services.finishing import run_finish
from runs.services.outbox import Dispatch
from runs.services.waiting import run_wait, run_wait_for_approval


def step_commit(run_id: int, token: str, phase: str, transition: loop.Transition,
                llm: RunLLM | None, elapsed_ms: int, dispatch: Dispatch | None) -> str | None:
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("project__team").get(id=run_id)
        if run.step_token != token:
            return None  # another delivery of this step already committed it
        if run.cancel_requested:
            run_finish(run, Run.Status.CANCELLED, "cancelled")
            return None
        _record_timing(transition, phase, llm, elapsed_ms)
        if transition.checkpoint is not None:
            _write_checkpoint(run, transition.checkpoint)
        if transition.reflection is not None:
            Iteration.objects.filter(run=run, number=run.iteration).update(
                reflection=transition.reflection)
        LoopEvent.objects.bulk_create([LoopEvent(run=run, **event)
                                       for event in transition.events])
        for name, value in transition.updates.items():
            setattr(run, name, value)
        if llm is not None and run.provider == "scripted":
            run.script_position = llm.script_position()
        run.phase, run.pending, run.step_attempts = transition.phase, transition.pending, 0
        run.step_token = new_token()
        for nearly in budgets.budget_notices_claim(run):
            signals.budget_nearly_spent.send(Run, run=run, state=nearly)
        if transition.status:
            run_finish(run, transition.status, run.error)
            next_token = None
        elif transition.approval is not None:
            run_wait_for_approval(run, transition.approval)
            next_token = None
        elif run.pause_requested:
            run_wait(run, Run.Status.PAUSED)
            next_token = None
        else:
            run.save()
            step_queue_after_commit(run, dispatch, run.step_token)
            next_token = run.step_token
        run_notify(run, {"kind": "run.step", "done": phase}, *transition.notes)
    return next_token


def _record_timing(transition: loop.Transition, phase: str, llm: RunLLM | None,
                   elapsed_ms: int) -> None:
    tokens = llm.tokens if llm is not None else 0
    target = transition.checkpoint if transition.checkpoint is not None else transition.pending
    timings = dict(target.get("timings") or {})
    timings[phase] = int(timings.get(phase, 0)) + elapsed_ms
    target["timings"] = timings
    if transition.checkpoint is not None:
        transition.checkpoint["tokens"] = int(transition.checkpoint.get("tokens", 0)) + tokens
    else:
        timings["tokens"] = int(timings.get("tokens", 0)) + tokens


def _rank(iteration: Iteration) -> tuple[bool, int, float]:
    """Which of two iterations is the better candidate: acceptance first, then the quality
    score (docs/engine.md, "The quality pipeline"), then the pass rate."""
    return (iteration.acceptance_passed, iteration.quality_score or 0, iteration.pass_rate)


def _write_checkpoint(run: Run, fields: dict[str, Any]) -> None:
    iteration = Iteration.objects.create(run=run, **fields)
    run.iteration = iteration.number
    best = run.best_iteration
    # A later iteration that passes the quality gate replaces an earlier one that did: it is
    # the one made after a reviewer asked for changes (docs/engine.md, "The reviewer model").
    if iteration.tests_ran and (best is None or iteration.succeeded
                                or _rank(iteration) > _rank(best)):
        run.best_iteration = iteration
