"""A run ends: cancelling it, its final status, and the publish request a successful run
asks for."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from autocoder.engine import changing, loop
from autocoder.plugins import read_manifest
from runs import signals
from runs.models import ApprovalRequest, Iteration, Run
from runs.pending import run_pending
from runs.services.common import RunStateError, run_notify
from runs.services.project_status import project_status_follow


def run_cancel(*, run: Run) -> Run:
    """Stop the run: at once when no step is executing, otherwise at the end of the current step
    (a sandbox in progress is killed through its cancel check)."""
    with transaction.atomic():
        locked = Run.objects.select_for_update().select_related("project").get(id=run.id)
        if locked.is_terminal:
            raise RunStateError(f"The run has already finished ({locked.status}).")
        locked.cancel_requested = True
        locked.save(update_fields=["cancel_requested"])
        if locked.status != Run.Status.RUNNING:
            run_finish(locked, Run.Status.CANCELLED, "cancelled")
        else:
            run_notify(locked, {"kind": "run.cancel_requested"})
    return Run.objects.get(id=run.id)


def run_finish(run: Run, status: str, reason: str) -> None:
    """Give the run its final status; a successful run asks for its publish approval."""
    now = timezone.now()
    run.status, run.finished_at, run.step_token = status, now, ""
    run.phase = Run.Phase.DONE
    if status != Run.Status.SUCCEEDED:
        run.error = reason or run.error
    if run.waiting_since:
        run.waited_s += (now - run.waiting_since).total_seconds()
        run.waiting_since = None
    run.save()
    ApprovalRequest.objects.filter(run=run, status=ApprovalRequest.Status.PENDING).update(
        status=ApprovalRequest.Status.STALE)
    if status == Run.Status.SUCCEEDED:
        _request_publish(run)
    project_status_follow(run)
    run_notify(run, {"kind": "run.finished", "reason": reason})


def _request_publish(run: Run) -> None:
    best = run.best_iteration
    ApprovalRequest.objects.create(run=run, project=run.project, kind=ApprovalRequest.Kind.PUBLISH,
                                   iteration=best.number if best else run.iteration, payload={
        "reasoning": f"The run succeeded at attempt {best.number if best else run.iteration}; "
                     "approve to mark the plugin ready for the marketplace.",
        "pass_rate": best.pass_rate if best else 0.0,
        "files": sorted(best.files) if best else [],
        "test_report": best.test_report if best else {},
        "safety": best.safety_report if best else {},
        "permissions": loop.manifest_permissions(best.files.get("plugin.toml", ""))
        if best else None,
        "services": _services(best.files.get("plugin.toml", "") if best else "",
                              run.project.spec),
        **_second_opinion_on(run, best),
        **_publish_proposal(run, best),
        # a change run: the version it follows, the next one and why (issue 29)
        **(changing.publish_change(run, run.project.spec, best.files) if best else {}),
    })


def _services(manifest_text: str, spec: Any) -> dict[str, Any]:
    """The other services the plugin reaches and the settings the team enters for them, as
    the plugin.toml being published declares them (address settings marked), with the systems
    the spec names in the requester's words (shown to the reviewer)."""
    manifest = read_manifest(manifest_text) if manifest_text else None
    services = (spec or {}).get("services") if isinstance(spec, dict) else None
    systems = services.get("systems", []) if isinstance(services, dict) else []
    if manifest is None:
        return {"hosts": [], "settings": [], "systems": systems}
    return {"hosts": [rule.text() for rule in manifest.hosts],
            "settings": [{"name": s.name, "description": s.description, "secret": s.secret,
                          **({"kind": s.kind} if s.kind else {})} for s in manifest.settings],
            "systems": systems}


def _publish_proposal(run: Run, best: Iteration | None) -> dict[str, Any]:
    """What the apps built on runs add to the publish request: the marketplace proposes the
    version, visibility and category the reviewer approves, and the exact files it would serve
    (runs/signals.py, publish_payload_wanted)."""
    if best is None or not best.files:
        return {}
    payload: dict[str, Any] = {}
    for _, extra in signals.publish_payload_wanted.send(Run, run=run, files=best.files):
        if isinstance(extra, dict):
            payload.update(extra)
    return payload


def _second_opinion_on(run: Run, best: Iteration | None) -> dict[str, Any]:
    """The reviewing model's opinion, asked by the verify step (never here, under the row
    lock), when it is about the candidate being published."""
    opinion = run_pending(run).get("second_opinion")
    if not opinion or best is None or opinion.get("iteration") != best.number:
        return {}
    return {"second_opinion": opinion}
