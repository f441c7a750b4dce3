"""The generation switch (docs/portal.md, "Pausing generation") on a real Dramatiq worker, the
session's Redis and PostgreSQL committed for real, the bwrap sandbox: paused, no run takes a
new step (a step under way finishes) and resuming goes on where it stopped, nothing lost or
done twice; manual, each new run waits for a reviewer's Start. The model is the scripted
provider (a hosted model is a boundary we cannot reach here)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import dramatiq
import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from runs.models import LLMCall, Run
from runs.services import holding, outbox
from runs.services.generation import generation_mode_change
from teams.models import AuditEntry, GenerationMode, SiteTeamSettings
from teams.selectors.generation import WORDS
from tests.factories import MembershipFactory, UserFactory
from tests.runs.test_tasks import wait_until_settled

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# What the "fixed_on_second" script asks of each role in a run that is never interrupted
# (tests/runs/test_tasks.py): a resumed run must ask exactly this, nothing twice.
WHOLE_RUN = {"architect": 1, "implementer": 2, "tester": 2, "reflector": 1, "reviewer": 1}


def wait_for(run_id: int, status: str, held_by: str = "", timeout_s: float = 120) -> Run:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = Run.objects.get(id=run_id)
        if (run.status == status and (not held_by or run.held_by == held_by)) or run.is_terminal:
            return run
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} is {Run.objects.get(id=run_id).status}, not {status}")


def page(user: Any, url: str) -> str:
    client = Client()
    client.force_login(user)
    return client.get(url).content.decode()


def test_pausing_holds_runs_in_flight_and_resuming_goes_on_with_nothing_lost_or_repeated(
        start_run: Callable[..., Run], worker: dramatiq.Worker, people: dict[str, Any]) -> None:
    site_admin = UserFactory(is_staff=True)
    run = start_run("fixed_on_second", dispatch=outbox.enqueue_step)
    wait_for(run.id, Run.Status.RUNNING)
    generation_mode_change(actor=site_admin, mode=GenerationMode.PAUSED)

    held = wait_for(run.id, Run.Status.HELD, "paused")
    assert (held.status, held.held_by) == (Run.Status.HELD, "paused"), held.status
    calls, position = LLMCall.objects.filter(run=run).count(), dict(held.script_position)
    time.sleep(2)  # the worker and its watchdog look meanwhile: nothing moves while paused
    assert holding.runs_held_release() == []
    still = Run.objects.get(id=run.id)
    assert (still.status, still.script_position) == (Run.Status.HELD, position)
    assert LLMCall.objects.filter(run=run).count() == calls
    shown = page(people["requester"], reverse("run_detail", args=[run.pk]))
    assert WORDS[GenerationMode.PAUSED] in shown
    assert "paused with all generation; it goes on when generation resumes" in shown
    board = page(people["requester"], reverse("board", args=[people["team"].slug]))
    assert WORDS[GenerationMode.PAUSED] + " (set by a site admin for every team)" in board

    # a run started while paused waits too, before its first step
    assert generation_mode_change(actor=site_admin, mode=GenerationMode.AUTOMATIC) == [run.id]
    final = wait_until_settled(run.id)
    assert final.status == Run.Status.SUCCEEDED, final.error
    assert final.script_position == WHOLE_RUN
    assert LLMCall.objects.filter(run=run).count() == sum(WHOLE_RUN.values())
    assert AuditEntry.objects.filter(action="generation.mode").count() == 2
    assert "Generation is paused" not in page(people["requester"],
                                              reverse("board", args=[people["team"].slug]))


def test_manual_generation_waits_for_a_reviewers_start(
        start_run: Callable[..., Run], worker: dramatiq.Worker, people: dict[str, Any]) -> None:
    team, requester, reviewer = people["team"], people["requester"], people["reviewer"]
    admin = UserFactory()
    MembershipFactory(team=team, user=admin, role="admin")
    admin_client = Client()
    admin_client.force_login(admin)
    answer = admin_client.post(reverse("team_generation", args=[team.slug]), {"mode": "manual"})
    assert answer.status_code == 302
    run = start_run("success", autonomy="full", dispatch=outbox.enqueue_step)
    waiting = Run.objects.get(id=run.id)
    assert (waiting.status, waiting.held_by) == (Run.Status.HELD, "manual")
    time.sleep(1)
    assert Run.objects.get(id=run.id).status == Run.Status.HELD  # full autonomy waits too
    url = reverse("run_detail", args=[run.pk])
    assert ">Start</button>" not in page(requester, url)  # a requester cannot start it
    assert ">Start</button>" in page(reviewer, url)
    requester_client = Client()
    requester_client.force_login(requester)
    refused = requester_client.post(reverse("run_control", args=[run.pk, "start"]))
    assert refused.status_code == 403
    assert Run.objects.get(id=run.id).held_by == "manual"

    # the site pauses meanwhile: Start turns the wait into the pause's
    SiteTeamSettings.objects.update_or_create(pk=SiteTeamSettings.SINGLETON_ID,
                                              defaults={"generation_mode": "paused"})
    reviewer_client = Client()
    reviewer_client.force_login(reviewer)
    reviewer_client.post(reverse("run_control", args=[run.pk, "start"]))
    assert Run.objects.get(id=run.id).held_by == "paused"
    # the site's switch is changed without the service (as after a crash): the watchdog's
    # release lets the run go on all the same
    SiteTeamSettings.objects.filter(pk=SiteTeamSettings.SINGLETON_ID).update(
        generation_mode="automatic")
    assert holding.runs_held_release() == [run.id]
    final = wait_until_settled(run.id)
    assert final.status == Run.Status.SUCCEEDED, final.error
    assert AuditEntry.objects.filter(action="run.start", team=team).count() == 1


def test_the_command_pauses_one_team_and_says_so(people: dict[str, Any],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    team = people["team"]
    call_command("generation", "pause", "--team", team.slug)
    assert "Generation is now paused for team engine-team." in capsys.readouterr().out
    team.refresh_from_db()
    assert team.generation_mode == "paused"
    entry = AuditEntry.objects.get(action="generation.mode")
    assert entry.target_repr == "paused for the team " + team.name
    call_command("generation", "manual")
    out = capsys.readouterr().out
    assert "Generation is now manual for every team." in out
    call_command("generation", "resume", "--team", team.slug)
    assert "The site's switch is stricter: runs of team engine-team are manual." in (
        capsys.readouterr().out)
