"""Live events: every step of a run is published to the run's group and summarised to the
team's group, through the real Redis channel layer, and only after the step committed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from autocoder import realtime
from runs.models import Run
from runs.services import common, starting, stepping

pytestmark = pytest.mark.django_db


def listen(group: str) -> tuple[Any, str]:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(group, channel)
    return layer, channel


def drain(layer: Any, channel: str, limit: int = 200) -> list[dict[str, Any]]:
    async def receive_all() -> list[dict[str, Any]]:
        import asyncio

        received = []
        for _ in range(limit):
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=0.5)
            except TimeoutError:
                break
            received.append(message["payload"])
        return received

    return async_to_sync(receive_all)()


@pytest.mark.slow
def test_a_run_publishes_its_steps_and_a_team_summary(
        start_run: Callable[..., Run], people: dict[str, Any],
        django_capture_on_commit_callbacks: Any) -> None:
    run = start_run("fixed_on_second")
    run_layer, run_channel = listen(realtime.run_group(run.id))
    team_layer, team_channel = listen(realtime.team_group(people["team"].id))
    token: str | None = run.step_token
    while token:
        with django_capture_on_commit_callbacks(execute=True):
            token = stepping.run_step_perform(run_id=run.id, token=token, dispatch=None)

    events = drain(run_layer, run_channel)
    kinds = [event["kind"] for event in events]
    assert kinds.count("run.step") == 13  # 2 x 6 phases of the iterations, and learn
    assert {"run.plan", "run.safety", "run.tests", "run.iteration", "run.finished"} <= set(kinds)
    results = [e["data"] for e in events if e["kind"] == "run.iteration"]
    assert [(r["iteration"], r["succeeded"]) for r in results] == [(1, False), (2, True)]
    assert events[-1]["data"]["status"] == "succeeded"
    # Other parts (notifications) share the team's group; the run's summaries are these.
    summaries = [s for s in drain(team_layer, team_channel) if s["kind"] == "run.updated"]
    assert len(summaries) >= 13
    assert summaries[-1]["data"] == {"run_id": run.id, "project_id": run.project_id,
                                     "status": "succeeded", "phase": "done", "iteration": 2}


def test_nothing_is_published_for_a_step_that_did_not_commit(
        start_run: Callable[..., Run]) -> None:
    run = start_run("success")
    layer, channel = listen(realtime.run_group(run.id))
    # Without the commit callbacks running (the test's transaction never commits), no event.
    stepping.run_step_perform(run_id=run.id, token=run.step_token, dispatch=None)
    assert drain(layer, channel) == []


def test_a_project_has_one_run_in_progress_at_a_time(start_run: Callable[..., Run]) -> None:
    run = start_run("success")
    with pytest.raises(common.RunStateError, match="already has a run in progress"):
        starting.run_start(project=run.project, script={}, dispatch=None)
