"""The team's "How generation is going" page shows the changes asked of the plugins the team
makes, those shipped, and whether fewer calls failed after each (tools/insights.py, added to
the page through the "insight_section" hook)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from runs.models import Project, Run
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation, ChangeRequest, Invocation

pytestmark = pytest.mark.django_db


def calls(activation: Activation, version: Any, ok: int, failed: int) -> None:
    for n in range(ok + failed):
        Invocation.objects.create(
            team=activation.team, plugin=activation.plugin, version=version, command="totals",
            caller=Invocation.Caller.USER, status="ok" if n < ok else "failed",
            error="" if n < ok else "The plugin reported an error: KeyError: 'amount'")


def insights(user: Any, slug: str) -> str:
    page = client_for(user).get(reverse("team_insights", args=[slug]))
    assert page.status_code == 200
    return page.content.decode()


def test_a_shipped_change_shows_whether_fewer_calls_failed_after_it(
        active: Activation, world: dict[str, Any]) -> None:
    acme = world["acme"]
    before = active.version
    project = Project.objects.create(team=acme, requester=world["requester"],
                                     name="month-totals", spec={})
    run = Run.objects.create(project=project, step_token="t", phase=Run.Phase.PLAN)
    after = publish_version(acme, "1.0.1", visibility="public")
    after.run = run
    after.save(update_fields=["run"])
    ChangeRequest.objects.create(
        team=acme, plugin=active.plugin, version=before, asked_by=world["requester"],
        from_team=acme, description="Rows without an amount count as zero",
        status=ChangeRequest.Status.SHIPPED, project=project)
    ChangeRequest.objects.create(
        team=acme, plugin=active.plugin, version=after, asked_by=world["requester"],
        from_team=acme, description="Also a yearly total", status=ChangeRequest.Status.OPEN)
    calls(active, before, ok=2, failed=2)
    calls(active, after, ok=3, failed=0)

    text = insights(world["requester"], "acme")
    assert "Changes to your plugins" in text
    assert "2 changes asked, 1 shipped" in text
    assert "Rows without an amount count as zero" in text and "1.0.0 → 1.0.1" in text
    assert "2 of 4" in text and "0 of 3" in text and "fewer failures" in text
    assert "not shipped" in text  # the open request
    assert "KeyError" not in text  # counts only, never what was sent or said


def test_the_empty_state_and_a_team_that_makes_no_plugin(active: Activation,
                                                         world: dict[str, Any]) -> None:
    assert "Nobody asked for a change to your team's plugins" in insights(world["admin"], "acme")
    assert "Changes to your plugins" not in insights(world["other_admin"], "other")
