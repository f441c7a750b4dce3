"""What the end-to-end journeys (tests/tools/test_service_journey.py, test_change_journey.py)
do as people do it: wait for real work to happen, and decide at a gate on its review page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.test import Client
from django.urls import reverse

from runs.models import ApprovalRequest, Run
from tests import live

SETTLE_S = 240  # a busy two-core machine runs the sandbox slowly; no test waits this long


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def wait_for(what: Callable[[], Any], message: str, timeout_s: float = SETTLE_S) -> Any:
    return live.wait_for(what, timeout_s, message)


def settled(run_id: int) -> Run:
    def check() -> Run | None:
        run = Run.objects.get(id=run_id)
        return run if run.is_terminal or run.status in Run.WAITING else None

    return wait_for(check, f"run {run_id} did not settle")


def decide_on_the_review_page(approval: ApprovalRequest, reviewer: Any) -> str:
    """What a reviewer does: open the request's page, keep what it offers (the candidate, and
    for a publish request the version, visibility and category), approve. Returns the page."""
    client = client_for(reviewer)
    page = client.get(reverse("approval_detail", args=[approval.pk]))
    assert page.status_code == 200
    form = page.context["form"]
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    data.update(decision="approve", comment="Looks right.")
    answer = client.post(reverse("approval_decide", args=[approval.pk]), data)
    assert answer.status_code == 302, answer.content.decode()[-3000:]
    return page.content.decode()
