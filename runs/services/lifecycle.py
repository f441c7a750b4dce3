"""A run's lifecycle: starting runs, performing their steps (the loop in autocoder/engine
decides what a step does, this module commits it), retry, cancel, pause, resume, hold and
release, the watchdog's re-sends, and deciding approval requests.

Durability rules (docs/engine.md, "Durable runs"), enforced here:
- a step is keyed by the run's `step_token`; a message carrying another token is stale and
  does nothing, so at-least-once delivery is harmless;
- before a step does any work, its attempt is counted in its own committed transaction; a step
  that keeps killing its worker (out of memory) is failed after ENGINE_STEP_MAX_ATTEMPTS;
- a step's results, the next phase and the next token are committed together, under a row lock,
  with the next message in the outbox (StepOutbox); it is sent after that commit, and by the
  workers' watchdog should Redis be down then;
- the worker performing a step is recorded on the run (`claimed_by`); the watchdog re-sends
  the step when that worker's heartbeat has expired (a killed worker is taken over in seconds).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from autocoder import heartbeat, metrics, realtime
from autocoder.engine import loop
from autocoder.engine.spec import spec_from_dict
from autocoder.installation import InstallationFault, fault_of
from autocoder.llm.readiness import ProbeResult, model_reach_fault
from autocoder.llm.types import LLMAuthError, LLMConfigError, LLMError
from projects.models import Membership, Project, Team
from runs import approval_rules, budgets, signals
from runs.llm_calls import (
    ProviderFactory,
    RunLLM,
    default_provider_factory,
    run_provider_choice,
)
from runs.models import ApprovalRequest, Iteration, LoopEvent, Run
from runs.selectors.results import RunTables
from runs.services.outbox import Dispatch, enqueue_step, outbox_send, outbox_step_add

logger = logging.getLogger(__name__)

LLM_PHASES = frozenset({Run.Phase.PLAN, Run.Phase.IMPLEMENT, Run.Phase.TEST_WRITE,
                        Run.Phase.REFLECT})
MAX_GUIDANCE_CHARS = 4000


class RunStateError(Exception):
    """The run is not in a state that allows this action (for example, already finished)."""


# The approval rules' refusals under the names this module's callers know (the rules, and the
# one refusal type they all are, live in runs/approval_rules.py).
ApprovalConflict = approval_rules.AlreadyDecided  # somebody else decided the request first
ApprovalInputError = approval_rules.DecisionNotAccepted  # e.g. an answer without guidance


def _new_token() -> str:
    return uuid.uuid4().hex


def _max_attempts() -> int:
    return int(loop.setting("ENGINE_STEP_MAX_ATTEMPTS", 3))


# -- projects and runs ---------------------------------------------------------------------------


def project_create(*, team: Team, requester: User, spec: dict[str, Any],
                   name: str = "") -> Project:
    """A project from a validated spec (SpecError otherwise, and nothing is written)."""
    parsed = spec_from_dict(spec)
    return Project.objects.create(team=team, requester=requester, name=name or parsed.name,
                                  spec=parsed.as_dict(), status=Project.Status.QUEUED)


def run_start(*, project: Project, provider: str = "", script: dict[str, Any] | None = None,
              autonomy: str = "", max_iterations: int | None = None,
              max_tokens: int | None = None, max_wall_s: int | None = None,
              use_lessons: bool = True, dispatch: Dispatch | None = enqueue_step,
              started_by: User | None = None) -> Run:
    """Queue a new run of `project`; its first step is sent once this transaction commits.
    `started_by`: who started (or retried) it, treated like the author at its gates.

    `provider` forces every role onto one provider; left empty, each role uses its configured
    model and the team's override (see llm_port.run_provider_choice)."""
    from django.conf import settings

    spec = spec_from_dict(project.spec)
    provider = run_provider_choice(provider, script=script)
    if provider == "scripted" and script is None and settings.LLM_SCRIPT:
        script = _configured_script()
    fault = _model_fault(provider, script)
    with transaction.atomic():
        Project.objects.select_for_update().filter(id=project.id).first()
        if project.runs.exclude(status__in=Run.TERMINAL).exists():
            raise RunStateError("This project already has a run in progress.")
        run = Run.objects.create(
            # A run held for a model uses whichever model is set up when it is released.
            project=project, provider="" if fault else provider, script=script,
            autonomy=autonomy or spec.autonomy,
            max_iterations=max_iterations or spec.max_iterations,
            max_tokens=max_tokens if max_tokens is not None
            else int(loop.setting("ENGINE_MAX_TOKENS", 200_000)),
            max_wall_s=max_wall_s if max_wall_s is not None
            else int(loop.setting("ENGINE_MAX_WALL_S", 3600)),
            use_lessons=use_lessons, step_token=_new_token(), phase=Run.Phase.PLAN,
            started_by=started_by, budget=budgets.budget_start(project.team),
        )
        _project_set_status(project, Project.Status.QUEUED, queue=True)
        if fault is not None:
            _hold(run, fault)
        else:
            _after_commit(run, dispatch, run.step_token)
            _notify(run, {"kind": "run.queued"})
    return run


def _model_fault(provider: str, script: dict[str, Any] | None) -> InstallationFault | None:
    """Why the run cannot reach a model now: it then waits, held, until one is set up.
    A run handed its own script needs no configured model."""
    if script is not None:
        return None
    if provider == "scripted":
        return InstallationFault("model", "the scripted provider (recorded replies) was chosen "
                                 "without a script", "pass --script FILE.json or set LLM_SCRIPT")
    return fault_of("model")


def _configured_script() -> dict[str, Any]:
    from django.conf import settings

    from autocoder.llm import ScriptedProvider
    from autocoder.llm.types import LLMConfigError

    if not settings.LLM_SCRIPT:
        raise LLMConfigError("the scripted provider needs a script (--script FILE.json or "
                             "LLM_SCRIPT)")
    return ScriptedProvider.from_file(settings.LLM_SCRIPT).script


def _project_set_status(project: Project, status: str, *, queue: bool = False) -> None:
    now = timezone.now()
    fields: dict[str, Any] = {"status": status, "updated_at": now}
    if queue:
        last = (Project.objects.filter(team_id=project.team_id, status=Project.Status.QUEUED)
                .exclude(id=project.id).order_by("-queue_position").first())
        fields["queue_position"] = (last.queue_position if last else 0) + 1
    elif status != Project.Status.QUEUED:
        fields["queue_position"] = 0
    rows = Project.objects.filter(id=project.id)
    if not rows.exclude(status=status).update(status_changed_at=now, **fields):
        rows.update(**fields)


PROJECT_STATUS_FOR_RUN: dict[str, str] = {
    Run.Status.QUEUED: Project.Status.QUEUED,
    Run.Status.RUNNING: Project.Status.GENERATING,
    Run.Status.PAUSED: Project.Status.GENERATING,
    Run.Status.AWAITING_APPROVAL: Project.Status.AWAITING_APPROVAL,
    Run.Status.ESCALATED: Project.Status.ESCALATED,
    # A successful run waits for its publish approval; approving it makes the project succeed.
    Run.Status.SUCCEEDED: Project.Status.AWAITING_APPROVAL,
    Run.Status.FAILED: Project.Status.FAILED,
    Run.Status.ABORTED: Project.Status.FAILED,
    Run.Status.CANCELLED: Project.Status.FAILED,
    # Held by the installation: to the requester the request simply waits in the queue.
    Run.Status.HELD: Project.Status.QUEUED,
}


# -- one step ------------------------------------------------------------------------------------


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


def _perform(run: Run, token: str, dispatch: Dispatch | None,
             provider_factory: ProviderFactory | None) -> tuple[str, str | None]:
    """(how the step ended: committed, held or failed; the token of the next step or None)."""
    run_id, phase, started = run.id, run.phase, time.monotonic()
    llm = RunLLM(run=run, iteration=run.iteration + 1,
                 factory=provider_factory or default_provider_factory)
    try:
        transition = _budget_transition(run) or loop.perform(loop.Step(
            run=run, team_id=run.project.team_id, history=RunTables(run),
            spec=spec_from_dict(run.project.spec), llm=llm, cancelled=_cancel_check(run_id)))
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
    return "committed", _commit(run_id, token, phase, transition, llm, elapsed_ms, dispatch)


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
        if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
            return None
        if run.cancel_requested:
            _finish(run, Run.Status.CANCELLED, "cancelled")
            return None
        if run.step_attempts >= _max_attempts():
            _finish(run, Run.Status.FAILED,
                    f"step '{run.phase}' of iteration {run.iteration + 1} was interrupted "
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
            _project_set_status(run.project, Project.Status.GENERATING)
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
        pending = {k: v for k, v in (run.pending or {}).items()
                   if k in ("lesson_ids", "lessons")}
        return loop.ending(pending, Run.Status.FAILED, reason)
    reached = budgets.budget_reached(run)
    if reached is None:
        return None
    return loop.Transition(phase=run.phase, pending=dict(run.pending or {}),
                           approval=loop.Approval(kind=ApprovalRequest.Kind.BUDGET,
                                                  payload=reached.payload()))


def _step_retry(run_id: int, token: str, phase: str, error: BaseException,
                dispatch: Dispatch | None) -> bool:
    """Send step `token` again after a pause while it has attempts left; False otherwise."""
    text = f"{type(error).__name__}: {error}"[:1000]
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(id=run_id).first()
        if run is None or run.step_token != token or run.step_attempts >= _max_attempts():
            return False
        run.error = f"step '{phase}' attempt {run.step_attempts} failed, retrying: {text}"
        run.save(update_fields=["error"])
        delay = int(loop.setting("ENGINE_RETRY_DELAY_MS", 2000)) * run.step_attempts
        _after_commit(run, dispatch, token, delay)
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
        reason = (f"step '{phase}' of iteration {run.iteration + 1} failed "
                  f"{run.step_attempts} times: {text}" if retryable
                  else f"step '{phase}' of iteration {run.iteration + 1} failed: {text}")
        if phase == Run.Phase.LEARN:
            _finish(run, run.pending.get("outcome", {}).get("status", Run.Status.FAILED), reason)
            return None
    # The end of the run still goes through `learn`, so the failure is remembered.
    pending = {k: v for k, v in (run.pending or {}).items() if k in ("lesson_ids", "lessons")}
    return _commit(run_id, token, phase, loop.ending(pending, Run.Status.FAILED, reason),
                   None, 0, dispatch)


def _commit(run_id: int, token: str, phase: str, transition: loop.Transition,
            llm: RunLLM | None, elapsed_ms: int, dispatch: Dispatch | None) -> str | None:
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("project__team").get(id=run_id)
        if run.step_token != token:
            return None  # another delivery of this step already committed it
        if run.cancel_requested:
            _finish(run, Run.Status.CANCELLED, "cancelled")
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
        run.step_token = _new_token()
        for nearly in budgets.budget_notices_claim(run):
            signals.budget_nearly_spent.send(Run, run=run, state=nearly)
        if transition.status:
            _finish(run, transition.status, run.error)
            next_token = None
        elif transition.approval is not None:
            _wait_for_approval(run, transition.approval)
            next_token = None
        elif run.pause_requested:
            _wait(run, Run.Status.PAUSED)
            next_token = None
        else:
            run.save()
            _after_commit(run, dispatch, run.step_token)
            next_token = run.step_token
        _notify(run, {"kind": "run.step", "done": phase}, *transition.notes)
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


def _write_checkpoint(run: Run, fields: dict[str, Any]) -> None:
    iteration = Iteration.objects.create(run=run, **fields)
    run.iteration = iteration.number
    best = run.best_iteration
    if iteration.tests_ran and (best is None or (iteration.acceptance_passed, iteration.pass_rate)
                                > (best.acceptance_passed, best.pass_rate)):
        run.best_iteration = iteration


def _after_commit(run: Run, dispatch: Dispatch | None, token: str, delay_ms: int = 0) -> None:
    """Send step `token` once the caller's transaction commits: its message is written to the
    outbox in that transaction, so a commit always carries its message, even if Redis is down
    at that moment or this process dies right after the commit."""
    if dispatch is None:
        return
    run.claimed_by = ""  # queued again: nobody holds the step until a worker claims it
    Run.objects.filter(id=run.id).update(claimed_by="")
    row = outbox_step_add(run.id, token, delay_ms)
    transaction.on_commit(lambda: outbox_send(ids=[row.id], dispatch=dispatch))


def _wait(run: Run, status: str) -> None:
    run.status, run.waiting_since = status, timezone.now()
    run.save()
    _project_set_status(run.project, PROJECT_STATUS_FOR_RUN[status])


def _wait_for_approval(run: Run, approval: loop.Approval) -> None:
    kind = approval.kind
    status = (Run.Status.ESCALATED if kind == ApprovalRequest.Kind.ESCALATION
              else Run.Status.AWAITING_APPROVAL)
    ApprovalRequest.objects.create(run=run, project=run.project, kind=kind,
                                   iteration=run.iteration + (kind == "plan"),
                                   payload=approval.payload)
    _wait(run, status)
    _notify(run, {"kind": "run.approval_requested", "approval_kind": kind})


def _finish(run: Run, status: str, reason: str) -> None:
    """Give the run its final status; a successful run asks for its publish approval."""
    now = timezone.now()
    run.status, run.finished_at, run.step_token = status, now, ""
    run.phase = Run.Phase.DONE
    if status != Run.Status.SUCCEEDED:
        run.error = reason or run.error
    if run.waiting_since:
        run.waited_s += (now - run.waiting_since).total_seconds()
        run.waiting_since = None
    run.save()
    ApprovalRequest.objects.filter(run=run, status=ApprovalRequest.Status.PENDING).update(
        status=ApprovalRequest.Status.STALE)
    if status == Run.Status.SUCCEEDED:
        _request_publish(run)
    _project_set_status(run.project, PROJECT_STATUS_FOR_RUN[status])
    _notify(run, {"kind": "run.finished", "reason": reason})


def _request_publish(run: Run) -> None:
    best = run.best_iteration
    ApprovalRequest.objects.create(run=run, project=run.project, kind=ApprovalRequest.Kind.PUBLISH,
                                   iteration=best.number if best else run.iteration, payload={
        "reasoning": f"The run succeeded at iteration {best.number if best else run.iteration}; "
                     "approve to mark the plugin ready for the marketplace.",
        "pass_rate": best.pass_rate if best else 0.0,
        "files": sorted(best.files) if best else [],
        "test_report": best.test_report if best else {},
        "safety": best.safety_report if best else {},
        "permissions": loop.manifest_permissions(best.files.get("plugin.toml", ""))
        if best else None,
        **_second_opinion_on(run, best),
        **_publish_proposal(run, best),
    })


def _publish_proposal(run: Run, best: Iteration | None) -> dict[str, Any]:
    """What the apps built on runs add to the publish request: the marketplace proposes the
    version, visibility and category the reviewer approves, and the exact files it would serve
    (runs/signals.py, publish_payload_wanted)."""
    if best is None or not best.files:
        return {}
    payload: dict[str, Any] = {}
    for _, extra in signals.publish_payload_wanted.send(Run, run=run, files=best.files):
        if isinstance(extra, dict):
            payload.update(extra)
    return payload


def _second_opinion_on(run: Run, best: Iteration | None) -> dict[str, Any]:
    """The reviewing model's opinion, asked by the verify step (never here, under the row
    lock), when it is about the candidate being published."""
    opinion = (run.pending or {}).get("second_opinion")
    if not opinion or best is None or opinion.get("iteration") != best.number:
        return {}
    return {"second_opinion": opinion}


def _notify(run: Run, *payloads: dict[str, Any]) -> None:
    """Publish after the commit: live pages must never show state that was rolled back."""
    run_id, team_id = run.id, run.project.team_id
    base: dict[str, Any] = {"run_id": run_id, "project_id": run.project_id,
                            "status": run.status, "phase": run.phase, "iteration": run.iteration}
    events = [{**base, **payload} for payload in payloads]

    def send() -> None:
        try:
            for event in events:
                realtime.publish(realtime.run_group(run_id),
                                 {"kind": event["kind"], "data": event})
            realtime.publish(realtime.team_group(team_id), {"kind": "run.updated", "data": base})
        except Exception:  # the channel layer is a convenience; the database is the truth
            logger.warning("could not publish run events for run %s", run_id, exc_info=True)

    transaction.on_commit(send)


# -- in-process driving (generate, bench, tests) -------------------------------------------------


def run_drive(*, run_id: int, provider_factory: ProviderFactory | None = None,
              on_step: Callable[[Run], None] | None = None) -> Run:
    """Perform the run's steps in this process until it finishes or waits for a person."""
    run = Run.objects.get(id=run_id)
    token: str | None = run.step_token if run.status in (Run.Status.QUEUED,
                                                          Run.Status.RUNNING) else None
    while token:
        token = run_step_perform(run_id=run_id, token=token, dispatch=None,
                                 provider_factory=provider_factory)
        if on_step is not None:
            on_step(Run.objects.get(id=run_id))
    return Run.objects.get(id=run_id)


# -- cancel, pause, resume -----------------------------------------------------------------------


def run_cancel(*, run: Run) -> Run:
    """Stop the run: at once when no step is executing, otherwise at the end of the current step
    (a sandbox in progress is killed through its cancel check)."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project").get(id=run.id)
        if locked.is_terminal:
            raise RunStateError(f"The run has already finished ({locked.status}).")
        locked.cancel_requested = True
        locked.save(update_fields=["cancel_requested"])
        if locked.status != Run.Status.RUNNING:
            _finish(locked, Run.Status.CANCELLED, "cancelled")
        else:
            _notify(locked, {"kind": "run.cancel_requested"})
    return Run.objects.get(id=run.id)


def run_retry(*, run: Run, started_by: User | None) -> Run:
    """A new run of the same project with the same settings, started by `started_by` (treated
    like the author at its gates); the old one stays as history."""
    if not run.is_terminal:
        raise RunStateError("Only a finished run can be retried; cancel it first.")
    return run_start(project=run.project, provider=run.provider, script=run.script,
                     autonomy=run.autonomy, max_iterations=run.max_iterations,
                     max_tokens=run.max_tokens, max_wall_s=run.max_wall_s,
                     use_lessons=run.use_lessons, started_by=started_by)


def run_pause(*, run: Run) -> Run:
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project").get(id=run.id)
        if locked.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
            raise RunStateError(f"Only a queued or running run can be paused ({locked.status}).")
        locked.pause_requested = True
        locked.save(update_fields=["pause_requested"])
        _notify(locked, {"kind": "run.pause_requested"})
    return Run.objects.get(id=run.id)


def run_resume(*, run: Run, dispatch: Dispatch | None = enqueue_step) -> Run:
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project").get(id=run.id)
        if locked.status == Run.Status.PAUSED:
            _continue(locked, dispatch)
        elif locked.pause_requested and locked.status in (Run.Status.QUEUED, Run.Status.RUNNING):
            locked.pause_requested = False
            locked.save(update_fields=["pause_requested"])
        else:
            raise RunStateError(f"Only a paused run can be resumed ({locked.status}).")
    return Run.objects.get(id=run.id)


def run_kick(*, run: Run, dispatch: Dispatch | None = enqueue_step) -> Run:
    """Send the current step again (an operator's "it seems stuck"): a message lost between a
    step's commit and its send would otherwise leave the run waiting for nothing. A duplicate
    is harmless: only one delivery of a step can commit."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(id=run.id)
        if locked.status not in (Run.Status.QUEUED, Run.Status.RUNNING):
            raise RunStateError(f"Only a queued or running run can be kicked ({locked.status}).")
        _after_commit(locked, dispatch, locked.step_token)
    return locked


def runs_stalled_kick(*, stalled_for_s: float | None = None,
                      dispatch: Dispatch = enqueue_step) -> list[int]:
    """The watchdog: send the current step again for runs whose steps stopped moving.

    A worker killed after a step's commit but before the next message went out leaves the run
    with a token no message carries; its redelivered message is stale and does nothing. A run
    that should be working but has not committed a step for longer than any step may take gets
    its current step re-sent. The guarded update makes one sweeper per run win, and a duplicate
    of a step that is in fact still running is harmless: only one delivery can commit.
    """
    limit = stalled_for_s if stalled_for_s is not None else float(
        loop.setting("ENGINE_STALL_S", 900))
    cutoff = timezone.now() - timedelta(seconds=limit)
    kicked: list[int] = []
    working = (Run.Status.QUEUED, Run.Status.RUNNING)
    for run_id, token in Run.objects.filter(status__in=working, updated_at__lt=cutoff
                                            ).exclude(step_token="").values_list("id",
                                                                                 "step_token"):
        if _resend(Run.objects.filter(id=run_id, step_token=token, status__in=working,
                                      updated_at__lt=cutoff), run_id, token, dispatch):
            kicked.append(run_id)
    if kicked:
        logger.warning("watchdog re-sent the current step of stalled runs %s", kicked)
    return kicked


def runs_orphaned_kick(*, live: set[str] | None = None,
                       dispatch: Dispatch = enqueue_step) -> list[int]:
    """The watchdog, every heartbeat interval: re-send the step of running runs whose claiming
    worker's heartbeat has expired (killed, out of memory, its machine gone).

    The broker would redeliver that worker's message only much later, so the step is sent
    again now; the guarded update (claimed_by still the dead worker) makes one sweeper win, and
    should the worker be alive after all, only one delivery of the step can commit."""
    alive = live if live is not None else heartbeat.live_worker_ids()
    kicked: list[int] = []
    held = (Run.objects.filter(status=Run.Status.RUNNING).exclude(claimed_by="")
            .exclude(step_token="").values_list("id", "step_token", "claimed_by"))
    for run_id, token, worker in held:
        if worker in alive:
            continue
        if _resend(Run.objects.filter(id=run_id, step_token=token, claimed_by=worker,
                                      status=Run.Status.RUNNING), run_id, token, dispatch):
            kicked.append(run_id)
            logger.warning("worker %s died holding step %s of run %s; sent it again",
                           worker, token, run_id)
    return kicked


def _resend(guard: Any, run_id: int, token: str, dispatch: Dispatch) -> bool:
    """Re-send step `token` when the guarded update wins (one sweeper per run)."""
    with transaction.atomic():
        if not guard.update(claimed_by="", updated_at=timezone.now()):
            return False
        row = outbox_step_add(run_id, token, 0)
    outbox_send(ids=[row.id], dispatch=dispatch)
    return True


# -- held by the installation --------------------------------------------------------------------


def run_hold(*, run_id: int, token: str, fault: InstallationFault) -> None:
    """Hold the run at the step `token` names: that step is performed again, from the start,
    once the broken part works. Nothing is charged to the model (no checkpoint, no detector
    event, no lesson), and the team's admins are told what to fix."""
    logger.error("run %s held: %s", run_id, fault)
    with transaction.atomic():
        run = Run.objects.select_for_update().select_related("project").filter(id=run_id).first()
        if run is not None and run.step_token == token and not run.is_terminal:
            _hold(run, fault)


def _hold(run: Run, fault: InstallationFault) -> None:
    run.status, run.held_by, run.error = Run.Status.HELD, fault.part, str(fault)
    run.step_attempts, run.waiting_since = 0, timezone.now()
    run.save()
    _project_set_status(run.project, Project.Status.QUEUED, queue=True)
    # The portal tells the team's admins what to fix (projects/receivers.py).
    signals.run_held.send(Run, team=run.project.team, fault=fault)
    _notify(run, {"kind": "run.held", "part": fault.part, "headline": fault.headline})


MODEL_PARTS = frozenset({"model", "model_reach"})


def runs_held_release(*, dispatch: Dispatch | None = enqueue_step) -> list[int]:
    """Let held runs go on whose broken part works again (the watchdog calls this every
    minute; saving a working model set-up calls it at once). Returns the released runs.
    A run released goes on with the step it was held at: nothing it did is redone, and the
    failed call cost nothing (no reply arrived) or is on record once."""
    held = list(Run.objects.filter(status=Run.Status.HELD)
                .values_list("id", "held_by", "project__team_id"))
    working = {part for part in {part for _, part, _ in held}
               if part not in MODEL_PARTS and fault_of(part) is None}
    # Runs held for the model go on only once a real call to the team's models works
    # (one short call per distinct model), so an address that still fails holds nobody twice.
    seen: dict[tuple[str, ...], ProbeResult] = {}
    answering = {team_id for team_id in {team for _, part, team in held if part in MODEL_PARTS}
                 if model_reach_fault(team_id=team_id, seen=seen) is None}
    released = []
    for run_id, part, team_id in held:
        goes_on = team_id in answering if part in MODEL_PARTS else part in working
        if goes_on and _release(run_id, dispatch):
            released.append(run_id)
    if released:
        logger.info("released held runs %s", released)
    return released


def _release(run_id: int, dispatch: Dispatch | None) -> bool:
    with transaction.atomic():
        run = (Run.objects.select_for_update().select_related("project")
               .filter(id=run_id, status=Run.Status.HELD).first())
        if run is None:
            return False  # released or cancelled by someone else meanwhile
        now = timezone.now()
        if run.waiting_since and run.started_at:
            run.waited_s += (now - run.waiting_since).total_seconds()
        started = run.started_at is not None
        run.status = Run.Status.RUNNING if started else Run.Status.QUEUED
        run.held_by, run.error, run.waiting_since = "", "", None
        run.step_token, run.step_attempts = _new_token(), 0
        run.save()
        _project_set_status(run.project, Project.Status.GENERATING if started
                            else Project.Status.QUEUED)
        _after_commit(run, dispatch, run.step_token)
        _notify(run, {"kind": "run.resumed"})
    return True


def _continue(run: Run, dispatch: Dispatch | None) -> None:
    """Leave a waiting state: the run goes on with its current phase."""
    now = timezone.now()
    if run.waiting_since:
        run.waited_s += (now - run.waiting_since).total_seconds()
    run.status, run.waiting_since, run.pause_requested = Run.Status.RUNNING, None, False
    run.step_token, run.step_attempts = _new_token(), 0
    run.save()
    _project_set_status(run.project, Project.Status.GENERATING)
    _after_commit(run, dispatch, run.step_token)
    _notify(run, {"kind": "run.resumed"})


# -- deciding an approval request -----------------------------------------------------------------


def approval_decide(*, approval: ApprovalRequest, user: User, decision: str,
                    comment: str = "", dispatch: Dispatch | None = enqueue_step) -> ApprovalRequest:
    """Decide `approval` as `user` and move the run on, under the approval rules
    (runs/approval_rules.py): who may decide, what the decision does, a candidate changed
    since `approval` was read, and N approvals (a decision made here counts as the decider's
    own vote). A refusal is an ApprovalRefused and changes nothing. Exactly one of two
    concurrent decisions wins; the other gets ApprovalConflict naming the decision made."""
    with transaction.atomic():
        locked = (ApprovalRequest.objects.select_for_update(of=("self",))
                  .select_related("project__team", "decided_by", "run").get(id=approval.id))
        status = approval_rules.check_decision(
            locked, user=user, decision=decision, comment=comment,
            candidate=approval_rules.approval_candidate(approval))
        approval_rules.check_enough_approvals(locked, user=user, decision=decision)
        won = ApprovalRequest.objects.filter(id=approval.id, status=ApprovalRequest.Status.PENDING
                                             ).update(status=status, decided_by=user,
                                                      decided_at=timezone.now(),
                                                      comment=comment.strip())
        if not won:  # the row lock above makes this unreachable; kept as a guard
            raise ApprovalConflict(approval_rules.already_decided_message(
                ApprovalRequest.objects.select_related("decided_by").get(id=approval.id)))
        decided = ApprovalRequest.objects.select_related("run", "project").get(id=approval.id)
        run = Run.objects.select_for_update().select_related("project").get(id=decided.run_id)
        _apply_decision(run, decided, dispatch)
    return ApprovalRequest.objects.get(id=approval.id)


def _apply_decision(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    handlers: dict[str, Callable[[Run, ApprovalRequest, Dispatch | None], None]] = {
        ApprovalRequest.Kind.PLAN: _decide_plan,
        ApprovalRequest.Kind.CHANGE: _decide_change,
        ApprovalRequest.Kind.ESCALATION: _decide_escalation,
        ApprovalRequest.Kind.PUBLISH: _decide_publish,
        ApprovalRequest.Kind.BUDGET: _decide_budget,
    }
    handlers[approval.kind](run, approval, dispatch)
    _notify(run, {"kind": "run.approval_decided", "approval_id": approval.id,
                  "approval_kind": approval.kind, "decision": approval.status})


def _add_guidance(run: Run, approval: ApprovalRequest) -> None:
    who = approval.decided_by.get_username() if approval.decided_by else "a reviewer"
    note = f"[{approval.kind}, iteration {approval.iteration}, {who}] {approval.comment}"
    run.guidance = f"{run.guidance}\n{note}".strip()[-MAX_GUIDANCE_CHARS:]


def _decide_plan(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    if approval.status != ApprovalRequest.Status.APPROVED:
        # A rejected plan is planned again, with the reviewer's comment as guidance.
        if approval.comment:
            _add_guidance(run, approval)
        run.phase = Run.Phase.PLAN
    _continue(run, dispatch)


def _decide_change(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    carry = {k: v for k, v in run.pending.items() if k in ("lesson_ids", "lessons")}
    if approval.status == ApprovalRequest.Status.REJECTED:
        who = approval.decided_by.get_username() if approval.decided_by else "a reviewer"
        reason = f"change of iteration {approval.iteration} rejected by {who}"
        run.phase = Run.Phase.LEARN
        run.pending = {**carry, "outcome": {"status": Run.Status.FAILED,
                                            "reason": f"{reason}: {approval.comment}".strip(": ")}}
    elif approval.status == ApprovalRequest.Status.CHANGES_REQUESTED:
        _add_guidance(run, approval)
        if run.phase == Run.Phase.LEARN:  # the iteration passed, but not to the reviewer's taste
            exhausted = loop.budget_exhausted(run, run.iteration)
            run.pending = ({**carry, "outcome": {"status": Run.Status.FAILED,
                                                 "reason": exhausted}}
                           if exhausted else carry)
            run.phase = Run.Phase.LEARN if exhausted else Run.Phase.IMPLEMENT
    _continue(run, dispatch)


def _decide_escalation(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    if approval.status == ApprovalRequest.Status.REJECTED:
        who = approval.decided_by.get_username() if approval.decided_by else "a reviewer"
        run.phase = Run.Phase.LEARN
        run.pending = {**run.pending, "outcome": {
            "status": Run.Status.ABORTED,
            "reason": f"stopped by {who} at an escalation: {approval.comment}".strip(": ")}}
    else:
        _add_guidance(run, approval)
        run.escalations_answered += 1
        run.escape_in_force = "escalate"
        run.since_iteration = run.iteration  # judge the guided attempts on their own
        run.phase = Run.Phase.PLAN
    _continue(run, dispatch)


def _decide_budget(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    if approval.status == ApprovalRequest.Status.APPROVED:
        budgets.budget_raise(run, approval.payload or {})
    else:
        who = approval.decided_by.get_username() if approval.decided_by else "a team admin"
        run.phase = Run.Phase.LEARN
        run.pending = {**run.pending, "outcome": {
            "status": Run.Status.ABORTED,
            "reason": f"stopped at its budget by {who}: {approval.comment}".strip(": ")}}
    _continue(run, dispatch)


def _decide_publish(run: Run, approval: ApprovalRequest, dispatch: Dispatch | None) -> None:
    if run.project.status == Project.Status.PUBLISHED:
        return  # a later request (another version or visibility) never un-publishes
    if approval.status != ApprovalRequest.Status.APPROVED and _publish_approved_before(approval):
        return  # only the new combination was refused; the plugin itself stays approved
    status = (Project.Status.SUCCEEDED if approval.status == ApprovalRequest.Status.APPROVED
              else Project.Status.FAILED)
    _project_set_status(run.project, status)


def _publish_approved_before(approval: ApprovalRequest) -> bool:
    return ApprovalRequest.objects.filter(
        run_id=approval.run_id, kind=ApprovalRequest.Kind.PUBLISH,
        status=ApprovalRequest.Status.APPROVED).exclude(pk=approval.pk).exists()


# -- one run in this process (generate, bench) ---------------------------------------------------


def generation_run(*, team: Team, requester: User, spec: dict[str, Any],
                   provider: str = "", script: dict[str, Any] | None = None,
                   max_iterations: int | None = None, autonomy: str = "",
                   use_lessons: bool = True, provider_factory: ProviderFactory | None = None,
                   on_step: Callable[[Run], None] | None = None) -> Run:
    """Create a project and run it here, step by step, through the same services a worker
    uses, until it finishes or waits for a person."""
    project = project_create(team=team, requester=requester, spec=spec)
    run = run_start(project=project, provider=provider, script=script, autonomy=autonomy,
                    max_iterations=max_iterations, use_lessons=use_lessons, dispatch=None,
                    started_by=requester)
    return run_drive(run_id=run.id, provider_factory=provider_factory, on_step=on_step)


def team_requester(team: Team) -> User:
    """Who a command-line run is requested by: a requester of the team, else its admin."""
    for role in (Membership.Role.REQUESTER, Membership.Role.ADMIN, Membership.Role.REVIEWER):
        membership = team.memberships.filter(role=role).select_related("user").first()
        if membership is not None:
            return membership.user
    raise RunStateError(f"Team {team.slug!r} has no members to request a run.")
