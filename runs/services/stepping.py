"""Performing one step of a run (the loop in autocoder/engine decides what a step does; its
result is committed by runs/services/progress.py): claiming it, the budgets checked before it,
and its retries and failure.

Durability rules (docs/engine.md, "Durable runs"), enforced here:
- a step is keyed by the run's `step_token`; a message carrying another token is stale and
  does nothing, so at-least-once delivery is harmless;
- before a step does any work, its attempt is counted in its own committed transaction; a step
  that keeps killing its worker (out of memory) is failed after ENGINE_STEP_MAX_ATTEMPTS;
- the worker performing a step is recorded on the run (`claimed_by`); the watchdog re-sends
  the step when that worker's heartbeat has expired (runs/services/resending.py).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable

from django.db import transaction
from django.utils import timezone

from autocoder import heartbeat, metrics
from autocoder.engine import loop
from autocoder.engine.spec import Spec, spec_from_dict
from autocoder.installation import InstallationFault
from autocoder.llm.types import LLMAuthError, LLMConfigError, LLMError
from runs import budgets
from runs.llm_calls import (
    ProviderFactory,
    RunLLM,
    default_provider_factory,
)
from runs.models import ApprovalRequest, Run
from runs.pending import pending_carried, pending_outcome_status, run_pending
from runs.selectors.results import RunTables
from runs.services.common import step_max_attempts, step_queue_after_commit
from runs.services.finishing import run_finish
from runs.services.holding import PAUSED, run_hold, run_switch_hold_locked
from runs.services.outbox import Dispatch, enqueue_step
from runs.services.progress import step_commit
from runs.services.project_status import project_status_follow
from teams.models import GenerationMode
from teams.selectors.generation import generation_state

logger = logging.getLogger(__name__)


LLM_PHASES = frozenset({Run.Phase.PLAN, Run.Phase.IMPLEMENT, Run.Phase.TEST_WRITE,
                        Run.Phase.REFLECT})


def run_step_perform(*, run_id: int, token: str, dispatch: Dispatch | None = enqueue_step,
                     provider_factory: ProviderFactory | None = None) -> str | None:
    """Perform the step `token` names, commit it and queue the next one.

    Returns the token of the step to perform next when the run goes on (for in-process drivers
    that pass dispatch=None), or None when the message was stale or the run stopped or waits.
    """
    run = _claim(run_id, token)
    if run is None:
        return None
    phase, started = run.phase, time.monotonic()
    outcome, following = _perform(run, token, dispatch, provider_factory)
    metrics.observe_step(phase, outcome, time.monotonic() - started)
    return following


def _spec_of(run: Run) -> Spec:
    """The run's spec, checked once per run and worker, not at every step: its project's spec
    does not change while it runs, and a Spec is frozen, so the steps share it (keyed by its
    text, so a changed spec would be checked again)."""
    return _spec_parsed(run.id, json.dumps(run.project.spec))  # its keys in their order


@functools.lru_cache(maxsize=32)
def _spec_parsed(run_id: int, text: str) -> Spec:
    return spec_from_dict(json.loads(text))


def _perform(run: Run, token: str, dispatch: Dispatch | None,
             provider_factory: ProviderFactory | None) -> tuple[str, str | None]:
    """(how the step ended: committed, held or failed; the token of the next step or None)."""
    run_id, phase, started = run.id, run.phase, time.monotonic()
    llm = RunLLM(run=run, iteration=run.iteration + 1,
                 factory=provider_factory or default_provider_factory)
    try:
        transition = _budget_transition(run) or loop.perform(loop.Step(
            run=run, team_id=run.project.team_id, history=RunTables(run),
            spec=_spec_of(run), llm=llm, cancelled=_cancel_check(run_id)))
    except InstallationFault as fault:
        # A model that did not answer at all gets the step's retries first (a blip, a server
        # restarting); then the run waits, held, for the watchdog to find it answering.
        cause = fault.__cause__
        if isinstance(cause, LLMError) and cause.retryable and _step_retry(
                run_id, token, phase, cause, dispatch):
            return "failed", token
        run_hold(run_id=run_id, token=token, fault=fault)
        return "held", None
    except (LLMConfigError, LLMAuthError) as error:
        # The model's set-up is wrong (no key, a bad key, a missing file): an admin's to fix.
        run_hold(run_id=run_id, token=token, fault=InstallationFault(
            "model", str(error), "check the model's settings on the Model page "
            "(see docs/llm.md)"))
        return "held", None
    except LLMError as error:
        return "failed", _step_failed(run_id, token, phase, error, retryable=error.retryable,
                                      dispatch=dispatch)
    except Exception as error:  # a bug or an infrastructure failure: retried, then failed
        logger.exception("step %s of run %s failed", phase, run_id)
        return "failed", _step_failed(run_id, token, phase, error, retryable=True,
                                      dispatch=dispatch)
    elapsed_ms = int((time.monotonic() - started) * 1000)
    return "committed", step_commit(run_id, token, phase, transition, llm, elapsed_ms, dispatch)


def _cancel_check(run_id: int, every_s: float = 1.0) -> Callable[[], bool]:
    """A cheap "was the run cancelled?" for the sandbox, which asks ten times a second."""
    last = {"at": 0.0, "answer": False}

    def cancelled() -> bool:
        now = time.monotonic()
        if not last["answer"] and now - last["at"] >= every_s:
            last["at"] = now
            last["answer"] = Run.objects.filter(id=run_id, cancel_requested=True).exists()
        return bool(last["answer"])

    return cancelled


def _claim(run_id: int, token: str) -> Run | None:
    """Count this attempt (committed before any work) and hand out the run, or None."""
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("project").filter(id=run_id).first()
        if run is None or not token or run.step_token != token:
            return None
        if run.status not in Run.ACTIVE:
            return None
        if run.cancel_requested:
            run_finish(run, Run.Status.CANCELLED, "cancelled")
            return None
        if generation_state(team_id=run.project.team_id).mode == GenerationMode.PAUSED:
            run_switch_hold_locked(run, PAUSED)  # this step is taken once generation resumes
            return None
        if run.step_attempts >= step_max_attempts():
            run_finish(run, Run.Status.FAILED,
                       f"step '{run.phase}' of attempt {run.iteration + 1} was interrupted "
                       f"{run.step_attempts} times (the worker was killed, for example for using "
                       "too much memory); the run stops here")
            return None
        run.step_attempts += 1
        # Who holds the step now: should this worker die, the watchdog sees its heartbeat end.
        run.claimed_by = heartbeat.current_worker_id()
        fields = ["step_attempts", "claimed_by"]
        if run.status == Run.Status.QUEUED:
            run.status, run.started_at = Run.Status.RUNNING, timezone.now()
            fields += ["status", "started_at"]
            project_status_follow(run)
        run.save(update_fields=fields)
    return run


def _budget_transition(run: Run) -> loop.Transition | None:
    """Before a step that costs tokens or time: end the run when its time or tokens ran out;
    when it reached a money budget, wait for the team's admins instead (runs/budgets.py), to
    perform this same step once they allow more."""
    if run.phase not in LLM_PHASES | {Run.Phase.SANDBOX, Run.Phase.GATE}:
        return None
    reason = loop.wall_time_exhausted(run)
    if not reason and run.max_tokens and run.tokens_total >= run.max_tokens:
        reason = f"token budget exhausted: {run.tokens_total} of {run.max_tokens} tokens used"
    if reason:
        return loop.ending(pending_carried(run), Run.Status.FAILED, reason)
    reached = budgets.budget_reached(run)
    if reached is None:
        return None
    return loop.Transition(phase=run.phase, pending=run_pending(run),
                           approval=loop.Approval(kind=ApprovalRequest.Kind.BUDGET,
                                                  payload=reached.payload()))


def _step_retry(run_id: int, token: str, phase: str, error: BaseException,
                dispatch: Dispatch | None) -> bool:
    """Send step `token` again after a pause while it has attempts left; False otherwise."""
    text = f"{type(error).__name__}: {error}"[:1000]
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(id=run_id).first()
        if run is None or run.step_token != token or run.step_attempts >= step_max_attempts():
            return False
        run.error = f"step '{phase}' attempt {run.step_attempts} failed, retrying: {text}"
        run.save(update_fields=["error"])
        delay = int(loop.setting("ENGINE_RETRY_DELAY_MS", 2000)) * run.step_attempts
        step_queue_after_commit(run, dispatch, token, delay)
    return True


def _step_failed(run_id: int, token: str, phase: str, error: BaseException, *,
                 retryable: bool, dispatch: Dispatch | None) -> str | None:
    if retryable and _step_retry(run_id, token, phase, error, dispatch):
        return token
    text = f"{type(error).__name__}: {error}"[:1000]
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(id=run_id).first()
        if run is None or run.step_token != token:
            return None
        reason = (f"step '{phase}' of attempt {run.iteration + 1} failed "
                  f"{run.step_attempts} times: {text}" if retryable
                  else f"step '{phase}' of attempt {run.iteration + 1} failed: {text}")
        if phase == Run.Phase.LEARN:
            run_finish(run, pending_outcome_status(run, Run.Status.FAILED), reason)
            return None
    # The end of the run still goes through `learn`, so the failure is remembered.
    ending = loop.ending(pending_carried(run), Run.Status.FAILED, reason)
    return step_commit(run_id, token, phase, ending, None, 0, dispatch)
