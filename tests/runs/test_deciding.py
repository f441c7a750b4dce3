"""A real run on a real Dramatiq worker (Redis broker, bwrap sandbox, scripted model) paused at
its plan gate; a team requiring two approvals lets it go on only at the second one, and the
worker picks it up at once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dramatiq
import pytest
from django.urls import reverse

from config.testing.workers import in_process_worker
from runs.approval_rules import approval_candidate
from runs.models import ApprovalRequest, Project, Run
from runs.services import starting
from teams.models import Notification
from tests.teams.conftest import Portal

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SCRIPTS = Path(__file__).resolve().parents[1] / "engine" / "scripts"


@pytest.fixture
def worker(clean_redis: Any, settings: Any) -> Iterator[dramatiq.Worker]:
    settings.ENGINE_SANDBOX_TIMEOUT_S = 30
    broker = dramatiq.get_broker()
    broker.flush_all()
    with in_process_worker() as running:
        yield running
    broker.flush_all()


def wait_for(condition: Any, timeout_s: float = 120, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def decide(portal: Portal, user: Any, approval: ApprovalRequest) -> None:
    client = portal.client(user)
    response = client.post(reverse("approval_decide", args=[approval.pk]), {
        "decision": "approve", "candidate": approval_candidate(approval), "comment": "fine"})
    assert response.status_code == 302


def test_second_approval_resumes_the_run_on_the_worker(portal: Portal,
                                                       worker: dramatiq.Worker) -> None:
    portal.team.required_approvals = 2
    portal.team.save()
    spec = json.loads((SCRIPTS / "greeter.spec.json").read_text())
    project = starting.project_create(team=portal.team, requester=portal.requester, spec=spec)
    run = starting.run_start(project=project, provider="scripted", autonomy="semi",
                           script=json.loads((SCRIPTS / "success.json").read_text()),
                           use_lessons=False)
    wait_for(lambda: Run.objects.get(pk=run.pk).status == Run.Status.AWAITING_APPROVAL,
             what="the plan gate")
    plan = ApprovalRequest.objects.get(run=run, kind=ApprovalRequest.Kind.PLAN)
    wait_for(lambda: Notification.objects.filter(approval=plan).count() == 2,
             what="the reviewers' notifications")

    decide(portal, portal.reviewer, plan)
    time.sleep(2)  # the worker would have started by now if the gate had opened
    assert Run.objects.get(pk=run.pk).status == Run.Status.AWAITING_APPROVAL

    decide(portal, portal.admin, plan)
    wait_for(lambda: Run.objects.get(pk=run.pk).iteration >= 1, what="the first iteration")
    wait_for(lambda: ApprovalRequest.objects.filter(run=run, kind="publish",
                                                    status="pending").exists(),
             timeout_s=180, what="the publish request")
    finished = Run.objects.get(pk=run.pk)
    assert finished.status == Run.Status.SUCCEEDED, finished.error
    assert Project.objects.get(pk=project.pk).status == Project.Status.AWAITING_APPROVAL
