"""A requester's own requests, as their home page lists them: each with its plain status and
a link to its latest run (drafts are the unfinished interviews, listed beside them)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import OuterRef, Subquery
from django.db.models.functions import JSONObject, Left

from runs.models import Project, Run

HOME_LIMIT = 20

# What each status means to the person who asked, in their words.
PLAIN_STATUS: dict[str, str] = {
    Project.Status.QUEUED: "Waiting its turn",
    Project.Status.GENERATING: "Being built and tested",
    Project.Status.AWAITING_APPROVAL: "Waiting for a reviewer",
    Project.Status.SUCCEEDED: "Built and tested: ready to publish",
    Project.Status.PUBLISHED: "Published in the marketplace",
    Project.Status.ESCALATED: "Needs a person's help",
    Project.Status.FAILED: "Stopped: it could not be built",
}
# What the latest run's own state says when it says more than the project's status does.
RUN_STATUS: dict[str, str] = {
    Run.Status.CANCELLED: "Cancelled by a person",
    Run.Status.PAUSED: "Paused",
}
# A run a person stopped at a gate ends "aborted", its error saying who (runs/services/
# deciding.py); the loop detector's abort is a build that did not work out.
STOPPED_BY_A_PERSON = "Stopped by a person"
HELD_BY: dict[str, str] = {
    "model": "Held: generation is not connected yet; your admins have been told",
    "model_reach": "Held: generation cannot reach the model; your admins have been told",
    "runtime": "Held: the installation needs a fix; your admins have been told",
    "sandbox": "Held: the installation needs a fix; your admins have been told",
    "manual": "Waiting for a reviewer to start it",
    "paused": "Paused with all generation; it goes on when generation resumes",
}


def plain_status(project: Project, run: dict[str, str] | None) -> str:
    """Where a request stands in the requester's words: its latest run's state when that is
    what holds it (a broken model, a person who stopped it), else the project's status."""
    run = run or {}
    if run.get("status") == Run.Status.HELD and run.get("held_by") in HELD_BY:
        return HELD_BY[run["held_by"]]
    if project.status == Project.Status.FAILED:
        if run.get("status") == Run.Status.CANCELLED:
            return RUN_STATUS[Run.Status.CANCELLED]
        if run.get("status") == Run.Status.ABORTED and run.get("error", "").startswith(
                "stopped "):
            return STOPPED_BY_A_PERSON
    if run.get("status") == Run.Status.PAUSED:
        return RUN_STATUS[Run.Status.PAUSED]
    return PLAIN_STATUS.get(project.status, project.get_status_display())


@dataclass(frozen=True)
class RequestRow:
    """One of the user's requests on their home page."""

    project: Project
    status: str
    run_id: int | None


def requests_for_user(user: User | AnonymousUser,
                      limit: int = HOME_LIMIT) -> list[RequestRow]:
    """The requests a user sent (not drafts) in teams they still belong to, newest first."""
    if not user.is_authenticated:
        return []
    newest = Run.objects.filter(project=OuterRef("pk")).order_by("-pk")
    projects = (Project.objects.filter(requester=user, team__memberships__user=user)
                .exclude(status=Project.Status.INTERVIEWING)
                .select_related("team")
                .annotate(latest_run=Subquery(newest.values("pk")[:1]),
                          latest_state=Subquery(newest.values(state=JSONObject(
                              status="status", held_by="held_by",
                              error=Left("error", 20)))[:1]))
                .order_by("-updated_at")[:limit])
    return [RequestRow(project=project,
                       status=plain_status(project, getattr(project, "latest_state", None)),
                       run_id=getattr(project, "latest_run", None))
            for project in projects]
