"""One run in this process (generate, the benches, tests): its steps performed here, through
the same services a worker uses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User

from runs.llm_calls import (
    ProviderFactory,
)
from runs.models import Run
from runs.services.common import RunStateError
from runs.services.starting import project_create, run_start
from runs.services.stepping import run_step_perform
from teams.models import Membership, Team


def run_drive(*, run_id: int, provider_factory: ProviderFactory | None = None,
              on_step: Callable[[Run], None] | None = None) -> Run:
    """Perform the run's steps in this process until it finishes or waits for a person."""
    run = Run.objects.get(id=run_id)
    token: str | None = run.step_token if run.status in Run.ACTIVE else None
    while token:
        token = run_step_perform(run_id=run_id, token=token, dispatch=None,
                                 provider_factory=provider_factory)
        if on_step is not None:
            on_step(Run.objects.get(id=run_id))
    return Run.objects.get(id=run_id)


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
