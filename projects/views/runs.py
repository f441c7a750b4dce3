"""The run view: live timeline, iterations, code and diffs, and the run's control buttons."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from autocoder.installation import PART_NAMES, InstallationFault
from projects.diffs import code_lines, split_rows, unified_rows
from projects.permissions import get_run_for_member
from projects.selectors.asked import asked_for
from projects.services import runs as services
from projects.views.broker import broker_reachable, broker_unavailable
from runs import approval_rules as rules
from runs.models import ApprovalRequest, Iteration, Project, Run
from runs.selectors.approvals import who_decides
from runs.selectors.baselines import baseline_choices, baseline_for
from runs.selectors.runs import (
    attempt_facts,
    findings_by_line,
    lessons_titles,
    reply_cuts,
    run_iteration,
    run_overview,
    spec_commands,
    told_findings,
    visible_findings,
)
from runs.summary import what_it_showed
from teams.http import AuthenticatedHttpRequest
from teams.models import Membership
from teams.selectors.generation import generation_state


def _int(params: QueryDict, name: str) -> int | None:
    value = params.get(name, "")
    return int(value) if value.isdigit() else None


@login_required
def run_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    run, membership = get_run_for_member(request.user, pk)
    context = _live_context(run, membership)
    part = request.GET.get("part")
    if request.htmx and part in ("live", "details"):  # the parts that follow live updates
        return render(request, f"projects/run_detail.html#{part}", context)
    if request.htmx and part == "attempt":  # the empty state, until an attempt is checked
        context.update(_iteration_context(run, request.GET))
        return render(request, "projects/run_detail.html#attempt", context)
    context.update(_iteration_context(run, request.GET), asked=asked_for(run.project))
    return render(request, "projects/run_detail.html", context)


def _live_context(run: Run, membership: Membership) -> dict[str, object]:
    overview = run_overview(run)
    return {"run": run, "project": run.project, "team": run.project.team, "overview": overview,
            "may_control": services.may_control(membership=membership, run=run),
            "held_headline": _held_headline(run),
            "generation": generation_state(team=run.project.team),
            "may_start": membership.can_review,
            # Admins are the ones told to fix a held run; they see what is broken.
            "sees_faults": membership.is_admin or membership.user.is_staff,
            "publishing": _publishing(run, membership, overview.pending_approval)}


def _publishing(run: Run, membership: Membership,
                pending: ApprovalRequest | None) -> dict[str, object]:
    """After success, where publishing stands and who acts next: while a publish request waits,
    its deciders decide it on its page and anyone else reads who does (not a form that would
    change the request they wait on); with none waiting, publishing asks for one."""
    if run.status != Run.Status.SUCCEEDED or run.project.status == Project.Status.PUBLISHED:
        return {}
    if pending is not None and pending.kind == ApprovalRequest.Kind.PUBLISH:
        if not rules.gate_refusal(membership=membership, approval=pending):
            return {"decide": pending}
        return {"words": who_decides(
            deciders=rules.gate_deciders(pending), team_name=run.project.team.name,
            thing="publish request", viewer_id=membership.user_id,
            author=run.project.requester), "waiting": pending}
    return {"publish": True}  # no request waits: publishing asks for one


def _held_headline(run: Run) -> str:
    """Plain words for a run held by the installation (see autocoder/installation.py)."""
    if run.status != Run.Status.HELD or run.held_by not in PART_NAMES:
        return ""
    return InstallationFault(run.held_by, "", "").headline


def _iteration_context(run: Run, params: QueryDict) -> dict[str, object]:
    iteration = run_iteration(run, _int(params, "iteration"))
    if iteration is None:
        return {"iteration": None}
    against = baseline_for(run, params.get("against"), current=iteration.number)
    old_files = against.files if against is not None else {}
    view = params.get("view") if params.get("view") in ("split", "unified", "code") else "unified"
    context: dict[str, object] = {
        "iteration": iteration, "against": against, "view": view,
        "against_key": against.key if against is not None else "0",
        "compare_choices": baseline_choices(run, iteration.number, _numbers(run)),
        "lessons": lessons_titles(list(iteration.lessons_used or [])),
        "findings": told_findings(iteration.safety_report or {}),
        "attempt_story": what_it_showed(attempt_facts(iteration, reports=True),
                                        spec_commands(run)),
        "outcomes": (iteration.test_report or {}).get("outcomes") or [],
        "cuts": reply_cuts(run, iteration.number),
    }
    if view == "split":
        context["split"] = split_rows(old_files, iteration.files)
    elif view == "unified":
        context["diff"] = unified_rows(old_files, iteration.files)
    context.update(_code_context(iteration, params.get("file", "")))
    return context


def _numbers(run: Run) -> list[int]:
    return list(run.iterations.order_by("number").values_list("number", flat=True))


def _code_context(iteration: Iteration, path: str) -> dict[str, object]:
    paths = sorted(iteration.files)
    flagged = {f.get("file") for f in visible_findings(iteration.safety_report or {})}
    if path not in iteration.files:
        path = next((p for p in paths if p in flagged), None) or next(
            (p for p in paths if p.endswith("plugin.py")), paths[0] if paths else "")
    lines = code_lines(iteration.files.get(path, ""),
                       findings_by_line(iteration.safety_report or {}, path)) if path else []
    return {"paths": paths, "path": path, "code": lines, "flagged_paths": flagged}


@login_required
@require_POST
def run_control(request: AuthenticatedHttpRequest, pk: int, action: str) -> HttpResponse:
    run, _ = get_run_for_member(request.user, pk)
    if action in QUEUEING and not broker_reachable():
        return broker_unavailable(request)  # pause and cancel work without Redis
    try:
        result = services.run_control(run=run, user=request.user, action=action)
    except services.RunControlError as error:
        messages.error(request, str(error))
        return redirect("run_detail", pk=run.pk)
    messages.success(request, _DONE[action])
    return redirect("run_detail", pk=result.pk)


# The actions that send a step to the workers, hence need Redis.
QUEUEING = frozenset({"retry", "resume", "start"})

_DONE = {
    "pause": "Pause requested: the run stops after its current step.",
    "resume": "The run continues.",
    "cancel": "Run cancelled. A step in progress is stopped and its sandbox killed.",
    "retry": "A new run of this project has been queued.",
    "start": "Started: the run takes its first step as soon as a worker is free.",
}
