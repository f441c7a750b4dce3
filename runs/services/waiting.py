"""A run waits for a person and goes on: pause and resume, waiting at an approval gate, and
continuing once the person acted."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from autocoder.engine import loop
from runs.models import ApprovalRequest, Run
from runs.services.common import RunStateError, new_token, run_notify, step_queue_after_commit
from runs.services.outbox import Dispatch, enqueue_step
from runs.services.project_status import project_status_follow


def run_pause(*, run: Run) -> Run:
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project").get(id=run.id)
        if locked.status not in Run.ACTIVE:
            raise RunStateError(f"Only a queued or running run can be paused ({locked.status}).")
        locked.pause_requested = True
        locked.save(update_fields=["pause_requested"])
        run_notify(locked, {"kind": "run.pause_requested"})
    return Run.objects.get(id=run.id)


def run_resume(*, run: Run, dispatch: Dispatch | None = enqueue_step) -> Run:
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project").get(id=run.id)
        if locked.status == Run.Status.PAUSED:
            run_continue(locked, dispatch)
        elif locked.pause_requested and locked.status in Run.ACTIVE:
            locked.pause_requested = False
            locked.save(update_fields=["pause_requested"])
        else:
            raise RunStateError(f"Only a paused run can be resumed ({locked.status}).")
    return Run.objects.get(id=run.id)


def run_wait(run: Run, status: str) -> None:
    run.status, run.waiting_since = status, timezone.now()
    run.save()
    project_status_follow(run)


def run_wait_for_approval(run: Run, approval: loop.Approval) -> None:
    kind = approval.kind
    status = (Run.Status.ESCALATED if kind == ApprovalRequest.Kind.ESCALATION
              else Run.Status.AWAITING_APPROVAL)
    ApprovalRequest.objects.create(run=run, project=run.project, kind=kind,
                                   iteration=run.iteration + (kind == "plan"),
                                   payload=approval.payload)
    run_wait(run, status)
    run_notify(run, {"kind": "run.approval_requested", "approval_kind": kind})


def run_continue(run: Run, dispatch: Dispatch | None) -> None:
    """Leave a waiting state: the run goes on with its current phase."""
    now = timezone.now()
    if run.waiting_since:
        run.waited_s += (now - run.waiting_since).total_seconds()
    run.status, run.waiting_since, run.pause_requested = Run.Status.RUNNING, None, False
    run.step_token, run.step_attempts = new_token(), 0
    run.save()
    project_status_follow(run)
    step_queue_after_commit(run, dispatch, run.step_token)
    run_notify(run, {"kind": "run.resumed"})
