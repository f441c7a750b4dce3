"""Durable runs: one step per message, idempotent re-delivery, resume after a killed worker,
the out-of-memory guard, cancel and pause, and a provider that times out.

A worker "killed" mid-step is simulated exactly where it matters: the step's attempt counter
was committed (stepping._claim) and nothing else, then the same message is delivered again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from autocoder.llm import ScriptedProvider
from autocoder.llm.types import LLMAuthError, LLMTimeout, Message
from runs import llm_calls
from runs.models import Iteration, LLMCall, Project, Run
from runs.services import common, driving, finishing, resending, stepping, waiting
from tests.engine.conftest import DispatchRecorder, iterations, load_script

pytestmark = pytest.mark.django_db


def step(run: Run, dispatch: DispatchRecorder) -> str | None:
    """Deliver the message the services last sent for `run`."""
    run_id, token, _ = dispatch.sent[-1]
    assert run_id == run.id
    return stepping.run_step_perform(run_id=run_id, token=token, dispatch=dispatch)


def test_each_message_performs_one_step_and_sends_the_next(
        start_run: Callable[..., Run], django_capture_on_commit_callbacks: Any) -> None:
    dispatch = DispatchRecorder()
    with django_capture_on_commit_callbacks(execute=True):
        run = start_run("success", dispatch=dispatch)
    # The first message is sent when run_start's transaction commits, not before.
    assert dispatch.sent == [(run.id, run.step_token, 0)]
    phases = []
    while True:
        phases.append(Run.objects.get(id=run.id).phase)
        with django_capture_on_commit_callbacks(execute=True):
            next_token = step(run, dispatch)
        if next_token is None:
            break
        assert dispatch.sent[-1] == (run.id, next_token, 0)
    assert phases == ["plan", "implement", "test_write", "gate", "sandbox", "verify", "learn"]
    assert len(dispatch.sent) == len(phases)
    assert Run.objects.get(id=run.id).status == Run.Status.SUCCEEDED


def test_a_redelivered_message_does_nothing(
        start_run: Callable[..., Run], django_capture_on_commit_callbacks: Any) -> None:
    dispatch = DispatchRecorder()
    run = start_run("success")
    first = run.step_token
    with django_capture_on_commit_callbacks(execute=True):
        stepping.run_step_perform(run_id=run.id, token=first, dispatch=dispatch)
    after_first = Run.objects.get(id=run.id)

    with django_capture_on_commit_callbacks(execute=True):
        assert stepping.run_step_perform(run_id=run.id, token=first, dispatch=dispatch) is None
    again = Run.objects.get(id=run.id)
    assert (again.phase, again.step_token, again.plan) == (
        after_first.phase, after_first.step_token, after_first.plan)
    assert LLMCall.objects.filter(run=run, role="architect").count() == 1
    assert dispatch.sent == [(run.id, after_first.step_token, 0)]


@pytest.mark.slow
def test_a_killed_worker_resumes_from_the_last_checkpoint(
        start_run: Callable[..., Run]) -> None:
    """Kill during implement of iteration 2 (after iteration 1's checkpoint), then re-deliver:
    iteration 1 is not redone and the script continues where the committed steps left it."""
    run = start_run("fixed_on_second")
    token: str | None = run.step_token
    while Run.objects.get(id=run.id).iteration < 1 or \
            Run.objects.get(id=run.id).phase != Run.Phase.IMPLEMENT:
        assert token is not None
        token = stepping.run_step_perform(run_id=run.id, token=token, dispatch=None)
    assert token is not None
    first = Iteration.objects.get(run=run, number=1)

    claimed = stepping._claim(run.id, token)  # the worker took the message and died
    assert claimed is not None and Run.objects.get(id=run.id).step_attempts == 1

    final = driving.run_drive(run_id=run.id)  # the broker delivers the message again
    assert final.status == Run.Status.SUCCEEDED
    assert [it.number for it in iterations(final)] == [1, 2]
    assert Iteration.objects.get(run=run, number=1).created_at == first.created_at
    # The replayed implement step got the second scripted reply (the fix), not a third.
    assert final.script_position["implementer"] == 2
    assert final.step_attempts == 0


@pytest.mark.slow
def test_a_step_abandoned_after_its_model_call_replays_the_same_reply(
        start_run: Callable[..., Run]) -> None:
    """The worker died after the model answered but before the step committed: the model call
    is on record (it cost tokens), and the re-delivered step gets the same scripted reply."""
    run = start_run("fixed_on_second")
    token = stepping.run_step_perform(run_id=run.id, token=run.step_token, dispatch=None)
    assert Run.objects.get(id=run.id).phase == Run.Phase.IMPLEMENT
    claimed = stepping._claim(run.id, token)
    llm = llm_calls.RunLLM(run=claimed, iteration=1)
    llm.complete("implementer", [Message("user", "anything")])  # answered, then the kill

    final = driving.run_drive(run_id=run.id)
    assert final.status == Run.Status.SUCCEEDED
    assert run.llm_calls.filter(role="implementer").count() == 3
    assert [it.number for it in iterations(final)] == [1, 2]
    assert not iterations(final)[0].succeeded


def test_a_step_that_keeps_killing_its_worker_is_failed(start_run: Callable[..., Run]) -> None:
    run = start_run("success")
    token = run.step_token
    for _ in range(3):
        assert stepping._claim(run.id, token) is not None  # out of memory, three times

    assert stepping.run_step_perform(run_id=run.id, token=token, dispatch=None) is None
    failed = Run.objects.get(id=run.id)
    assert failed.status == Run.Status.FAILED
    assert "interrupted 3 times" in failed.error
    assert failed.llm_calls.count() == 0
    assert failed.project.status == Project.Status.FAILED


class TimingOutProvider(ScriptedProvider):
    """A provider whose endpoint times out (the hosted LLM is the boundary stood in for)."""

    name = "flaky"

    def __init__(self, script: dict[str, list[str]], *, failures: int) -> None:
        super().__init__(script)
        self.failures = failures

    def _attempt(self, messages: list[Message], **kwargs: Any) -> Any:
        if kwargs["role"] == "implementer" and self.failures:
            self.failures -= 1
            raise LLMTimeout("the model did not answer within 120s")
        return super()._attempt(messages, **kwargs)


@pytest.mark.slow
def test_a_provider_timeout_is_retried_and_the_run_succeeds(
        start_run: Callable[..., Run]) -> None:
    provider = TimingOutProvider(load_script("success"), failures=1)
    run = start_run(None, provider="flaky")
    final = driving.run_drive(run_id=run.id, provider_factory=lambda run, role: provider)

    assert final.status == Run.Status.SUCCEEDED
    timeout = final.llm_calls.get(role="implementer", error__startswith="LLMTimeout")
    assert timeout.attempts == 1
    assert final.llm_calls.filter(role="implementer", error="").count() == 1


def test_a_provider_that_never_answers_holds_the_run_after_the_steps_retries(
        start_run: Callable[..., Run]) -> None:
    """Not the model's failure nor the requester's (issue 28): the installation's model does
    not answer, so after the step's retries the run waits, held, for it to answer again."""
    provider = TimingOutProvider(load_script("success"), failures=100)
    run = start_run(None, provider="flaky")
    final = driving.run_drive(run_id=run.id, provider_factory=lambda run, role: provider)

    assert (final.status, final.held_by) == (Run.Status.HELD, "model_reach")
    assert "did not answer in time" in final.error
    assert final.llm_calls.filter(role="implementer").count() == 3
    assert final.iteration == 0 and final.phase == Run.Phase.IMPLEMENT


def test_a_provider_refusing_the_key_holds_the_run_for_the_admins(
        start_run: Callable[..., Run]) -> None:
    """A refused key is the installation's to fix, not the model's failure: the run waits,
    held, with the provider's words, and nothing is charged to an iteration."""
    class Refusing(ScriptedProvider):
        def _attempt(self, messages: list[Message], **kwargs: Any) -> Any:
            raise LLMAuthError("HTTP 401: invalid key (check the API key for this provider)")

    provider = Refusing({})
    run = start_run(None, provider="refusing")
    final = driving.run_drive(run_id=run.id, provider_factory=lambda run, role: provider)

    assert (final.status, final.held_by) == (Run.Status.HELD, "model_reach")
    assert "the model connection is broken" in final.error
    assert "refused the API key" in final.error
    assert final.llm_calls.count() == 1 and final.iteration == 0
    assert final.project.status == Project.Status.QUEUED


def test_cancel_between_steps(start_run: Callable[..., Run]) -> None:
    run = start_run("fixed_on_second")
    token = stepping.run_step_perform(run_id=run.id, token=run.step_token, dispatch=None)
    finishing.run_cancel(run=run)

    assert stepping.run_step_perform(run_id=run.id, token=token, dispatch=None) is None
    cancelled = Run.objects.get(id=run.id)
    assert cancelled.status == Run.Status.CANCELLED
    assert cancelled.finished_at is not None
    with pytest.raises(common.RunStateError, match="already finished"):
        finishing.run_cancel(run=cancelled)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_cancel_kills_a_running_sandbox(start_run: Callable[..., Run], settings: Any) -> None:
    settings.ENGINE_SANDBOX_TIMEOUT_S = 120
    run = start_run("hang_then_ok")
    token: str | None = run.step_token
    while Run.objects.get(id=run.id).phase != Run.Phase.SANDBOX:
        assert token is not None
        token = stepping.run_step_perform(run_id=run.id, token=token, dispatch=None)
    assert token is not None
    result: dict[str, Any] = {}

    def worker() -> None:
        started = time.monotonic()
        try:
            result["next"] = stepping.run_step_perform(run_id=run.id, token=token, dispatch=None)
        finally:
            result["seconds"] = time.monotonic() - started
            connection.close()

    thread = threading.Thread(target=worker)
    thread.start()
    time.sleep(2)
    finishing.run_cancel(run=run)
    thread.join(timeout=60)

    assert not thread.is_alive()
    assert result["next"] is None and result["seconds"] < 30
    assert Run.objects.get(id=run.id).status == Run.Status.CANCELLED


def test_pause_and_resume(start_run: Callable[..., Run]) -> None:
    dispatch = DispatchRecorder()
    run = start_run("success")
    waiting.run_pause(run=run)
    assert stepping.run_step_perform(run_id=run.id, token=run.step_token,
                                     dispatch=dispatch) is None
    paused = Run.objects.get(id=run.id)
    assert paused.status == Run.Status.PAUSED and paused.phase == Run.Phase.IMPLEMENT
    assert dispatch.sent == []

    waiting.run_resume(run=paused, dispatch=None)
    resumed = driving.run_drive(run_id=run.id)
    assert resumed.status == Run.Status.SUCCEEDED
    assert resumed.llm_calls.filter(role="architect").count() == 1


def test_a_lost_message_is_sent_again_by_a_kick(
        start_run: Callable[..., Run], django_capture_on_commit_callbacks: Any) -> None:
    run = start_run("success")  # its first message was never sent (no dispatch)
    dispatch = DispatchRecorder()
    with django_capture_on_commit_callbacks(execute=True):
        resending.run_kick(run=run, dispatch=dispatch)
    assert dispatch.sent == [(run.id, run.step_token, 0)]
    assert driving.run_drive(run_id=run.id).status == Run.Status.SUCCEEDED
    with pytest.raises(common.RunStateError, match="Only a queued or running run"):
        resending.run_kick(run=run, dispatch=dispatch)


def test_the_watchdog_resends_the_step_of_a_run_that_stopped_moving(
        start_run: Callable[..., Run]) -> None:
    """A worker killed after committing a step but before sending the next message leaves a
    token no message carries; the watchdog notices the run stopped moving and re-sends it."""
    stalled = start_run("success")  # its first message was never sent: it waits forever
    moving = start_run("success")
    Run.objects.filter(id=stalled.id).update(
        updated_at=timezone.now() - timedelta(seconds=1000))
    dispatch = DispatchRecorder()

    assert resending.runs_stalled_kick(stalled_for_s=900, dispatch=dispatch) == [stalled.id]
    assert dispatch.sent == [(stalled.id, stalled.step_token, 0)]
    # The kick moved the clock: the next sweep leaves the run alone while it works.
    assert resending.runs_stalled_kick(stalled_for_s=900, dispatch=dispatch) == []
    stepping.run_step_perform(run_id=stalled.id, token=stalled.step_token, dispatch=None)
    assert Run.objects.get(id=stalled.id).phase == "implement"
    assert moving.id not in [run_id for run_id, _, _ in dispatch.sent]


def test_the_watchdog_ignores_finished_and_waiting_runs(start_run: Callable[..., Run]) -> None:
    finished = start_run("success")
    driving.run_drive(run_id=finished.id)
    Run.objects.update(updated_at=timezone.now() - timedelta(seconds=5000))
    dispatch = DispatchRecorder()
    assert resending.runs_stalled_kick(stalled_for_s=900, dispatch=dispatch) == []
    assert dispatch.sent == []


@pytest.mark.django_db(transaction=True)  # the heartbeat thread has its own connection
def test_one_worker_heartbeat_runs_the_watchdog_per_interval(
        start_run: Callable[..., Run], clean_redis: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from autocoder import heartbeat

    sent: list[tuple[int, str, int]] = []
    sweep = resending.runs_stalled_kick

    def recorded() -> list[int]:
        return sweep(dispatch=lambda *args: sent.append(args))

    # The runs app registered its sweep with the heartbeat at start-up (runs/apps.py).
    monkeypatch.setattr(heartbeat, "SLOW_SWEEPS", [recorded if s is sweep else s
                                                   for s in heartbeat.SLOW_SWEEPS])
    run = start_run("success")
    Run.objects.filter(id=run.id).update(updated_at=timezone.now() - timedelta(seconds=5000))
    middleware = heartbeat.WorkerHeartbeat()
    middleware.after_worker_boot(None, None)  # type: ignore[arg-type]
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        time.sleep(0.05)
    middleware.before_worker_shutdown(None, None)  # type: ignore[arg-type]
    assert [run_id for run_id, _, _ in sent] == [run.id]
    assert clean_redis.get(heartbeat.WATCHDOG_LOCK) is not None  # others skip this interval


def test_the_spec_is_checked_once_per_run_not_at_every_step(
        start_run: Callable[..., Run], django_capture_on_commit_callbacks: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step used to check the whole spec again; now the steps of a run share one check
    (runs/services/stepping.py, _spec_of)."""
    checked: list[object] = []
    real = stepping.spec_from_dict

    def counting(data: object) -> Any:
        checked.append(data)
        return real(data)

    monkeypatch.setattr(stepping, "spec_from_dict", counting)
    stepping._spec_parsed.cache_clear()
    dispatch = DispatchRecorder()
    with django_capture_on_commit_callbacks(execute=True):
        run = start_run("success", dispatch=dispatch)
    steps = 0
    while True:
        with django_capture_on_commit_callbacks(execute=True):
            next_token = step(run, dispatch)
        steps += 1
        if next_token is None:
            break
    assert steps == 7 and Run.objects.get(id=run.id).status == Run.Status.SUCCEEDED
    assert len(checked) == 1
