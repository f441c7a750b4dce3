"""Starting runs: a project from a spec, a new run of it (queued, or held when no model can
answer), and a retry of a finished run."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from autocoder.engine import loop
from autocoder.engine.spec import spec_from_dict
from autocoder.installation import InstallationFault, fault_of
from autocoder.llm.readiness import team_reach_fault
from runs import budgets
from runs.llm_calls import (
    run_provider_choice,
)
from runs.models import Project, Run
from runs.services.common import RunStateError, new_token, run_notify, step_queue_after_commit
from runs.services.holding import MANUAL, PAUSED, run_hold_locked, run_switch_hold_locked
from runs.services.outbox import Dispatch, enqueue_step
from runs.services.project_status import project_status_follow
from teams.models import GenerationMode, Team
from teams.selectors.generation import generation_state


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
              started_by: User | None = None, base_files: dict[str, str] | None = None,
              base_version: str = "", base_tests_may_change: bool = False) -> Run:
    """Queue a new run of `project`; its first step is sent once this transaction commits.
    `started_by`: who started (or retried) it, treated like the author at its gates.
    `base_files`, `base_version`: a change run starts from this version of the plugin
    (runs/services/changes.py; autocoder/engine/changing.py).

    `provider` forces every role onto one provider; left empty, each role uses its configured
    model and the team's override (see llm_port.run_provider_choice)."""
    from django.conf import settings

    spec = spec_from_dict(project.spec)
    provider = run_provider_choice(provider, script=script)
    if provider == "scripted" and script is None and settings.LLM_SCRIPT:
        script = _configured_script()
    fault = _model_fault(provider, script, team_id=project.team_id)
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
            use_lessons=use_lessons, step_token=new_token(), phase=Run.Phase.PLAN,
            started_by=started_by, budget=budgets.budget_start(project.team),
            base_files=dict(base_files or {}), base_version=base_version,
            base_tests_may_change=base_tests_may_change,
        )
        project_status_follow(run, queue=True)
        switch = generation_state(team_id=project.team_id).mode  # as saved, not as loaded
        if fault is not None:
            run_hold_locked(run, fault)
        elif switch != GenerationMode.AUTOMATIC:
            run_switch_hold_locked(run, PAUSED if switch == GenerationMode.PAUSED else MANUAL)
        else:
            step_queue_after_commit(run, dispatch, run.step_token)
            run_notify(run, {"kind": "run.queued"})
    return run


def _model_fault(provider: str, script: dict[str, Any] | None, *,
                 team_id: int) -> InstallationFault | None:
    """Why the run cannot reach a model now: it then waits, held, until one is set up, or
    until the model its roles use answers again when its last call or check failed (the Model
    page's save, `up`'s check at start, a run's call). A run handed its own script needs no
    configured model."""
    if script is not None:
        return None
    if provider == "scripted":
        return InstallationFault("model", "the scripted provider (recorded replies) was chosen "
                                 "without a script", "pass --script FILE.json or set LLM_SCRIPT")
    fault = fault_of("model")
    if fault is None and not provider:  # the roles' own models (a forced provider: its calls)
        fault = team_reach_fault(team_id=team_id)
    return fault


def _configured_script() -> dict[str, Any]:
    from django.conf import settings

    from autocoder.llm import ScriptedProvider
    from autocoder.llm.types import LLMConfigError

    if not settings.LLM_SCRIPT:
        raise LLMConfigError("the scripted provider needs a script (--script FILE.json or "
                             "LLM_SCRIPT)")
    return ScriptedProvider.from_file(settings.LLM_SCRIPT).script


def run_retry(*, run: Run, started_by: User | None) -> Run:
    """A new run of the same project with the same settings, started by `started_by` (treated
    like the author at its gates); the old one stays as history."""
    if not run.is_terminal:
        raise RunStateError("Only a finished run can be retried; cancel it first.")
    return run_start(project=run.project, provider=run.provider, script=run.script,
                     autonomy=run.autonomy, max_iterations=run.max_iterations,
                     max_tokens=run.max_tokens, max_wall_s=run.max_wall_s,
                     use_lessons=run.use_lessons, started_by=started_by,
                     base_files=run.base_files, base_version=run.base_version,
                     base_tests_may_change=run.base_tests_may_change)
