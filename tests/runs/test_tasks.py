"""A whole scripted run through the real Dramatiq actors: a worker on the Redis broker from the
settings (in-process threads) and the test session's PostgreSQL, committed for real."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import dramatiq
import pytest

from runs.models import Run
from runs.services import deciding, outbox

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]



def wait_until_settled(run_id: int, timeout_s: float = 120) -> Run:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = Run.objects.get(id=run_id)
        if run.is_terminal or run.status in Run.WAITING:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not settle: {Run.objects.get(id=run_id).phase}")


def test_a_worker_runs_a_scripted_run_to_success(start_run: Callable[..., Run],
                                                 worker: dramatiq.Worker) -> None:
    run = start_run("fixed_on_second", dispatch=outbox.enqueue_step)

    final = wait_until_settled(run.id)
    assert final.status == Run.Status.SUCCEEDED, final.error
    assert [it.number for it in final.iterations.order_by("number")] == [1, 2]
    assert final.script_position == {"architect": 1, "implementer": 2, "tester": 2,
                                      "reflector": 1, "reviewer": 1}


def test_approval_in_the_portal_resumes_the_run_on_the_worker(
        start_run: Callable[..., Run], worker: dramatiq.Worker, people: dict[str, Any]) -> None:
    run = start_run("success", autonomy="semi", dispatch=outbox.enqueue_step)
    waiting = wait_until_settled(run.id)
    assert waiting.status == Run.Status.AWAITING_APPROVAL

    deciding.approval_decide(approval=waiting.approvals.get(), user=people["reviewer"],
                             decision="approve")
    assert wait_until_settled(run.id).status == Run.Status.SUCCEEDED
