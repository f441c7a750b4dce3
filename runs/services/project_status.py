"""The one place a project's status is written: the project follows its run
(PROJECT_STATUS_FOR_RUN), joins its team's queue, succeeds or fails at its publish gate, and is
published when the marketplace puts a version of it live (marketplace/services/gate.py)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from runs.models import Project, Run


def project_status_follow(run: Run, *, queue: bool = False) -> None:
    """The run's project takes the status that goes with the run's (PROJECT_STATUS_FOR_RUN);
    `queue`: it joins the end of its team's queue."""
    project_status_set(run.project, PROJECT_STATUS_FOR_RUN[run.status], queue=queue)


def project_publish_decided(project: Project, *, approved: bool) -> None:
    """A reviewer decided a run's publish request: the project succeeds, or fails."""
    if project.status == Project.Status.PUBLISHED:
        return  # a later request (another version or visibility) never un-publishes
    project_status_set(project, Project.Status.SUCCEEDED if approved else Project.Status.FAILED)


def project_published(*, run_id: int) -> Project | None:
    """A version of the run's result went live in the marketplace: its project is published
    (once; None when it already was, or the run is gone)."""
    project = Project.objects.filter(runs__id=run_id).first()
    if project is None or project.status == Project.Status.PUBLISHED:
        return None
    project_status_set(project, Project.Status.PUBLISHED)
    return project


def project_status_set(project: Project, status: str, *, queue: bool = False) -> None:
    now = timezone.now()
    fields: dict[str, Any] = {"status": status, "updated_at": now}
    if queue:
        last = (Project.objects.filter(team_id=project.team_id, status=Project.Status.QUEUED)
                .exclude(id=project.id).order_by("-queue_position").first())
        fields["queue_position"] = (last.queue_position if last else 0) + 1
    elif status != Project.Status.QUEUED:
        fields["queue_position"] = 0
    rows = Project.objects.filter(id=project.id)
    if not rows.exclude(status=status).update(status_changed_at=now, **fields):
        rows.update(**fields)


PROJECT_STATUS_FOR_RUN: dict[str, str] = {
    Run.Status.QUEUED: Project.Status.QUEUED,
    Run.Status.RUNNING: Project.Status.GENERATING,
    Run.Status.PAUSED: Project.Status.GENERATING,
    Run.Status.AWAITING_APPROVAL: Project.Status.AWAITING_APPROVAL,
    Run.Status.ESCALATED: Project.Status.ESCALATED,
    # A successful run waits for its publish approval; approving it makes the project succeed.
    Run.Status.SUCCEEDED: Project.Status.AWAITING_APPROVAL,
    Run.Status.FAILED: Project.Status.FAILED,
    Run.Status.ABORTED: Project.Status.FAILED,
    Run.Status.CANCELLED: Project.Status.FAILED,
    # Held by the installation: to the requester the request simply waits in the queue.
    Run.Status.HELD: Project.Status.QUEUED,
}
