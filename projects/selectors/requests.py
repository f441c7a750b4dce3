"""A requester's own requests, as their home page lists them: each with its plain status and
a link to its latest run (drafts are the unfinished interviews, listed beside them)."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import OuterRef, Subquery

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
    latest_run = Run.objects.filter(project=OuterRef("pk")).order_by("-pk").values("pk")[:1]
    projects = (Project.objects.filter(requester=user, team__memberships__user=user)
                .exclude(status=Project.Status.INTERVIEWING)
                .select_related("team").annotate(latest_run=Subquery(latest_run))
                .order_by("-updated_at")[:limit])
    return [RequestRow(project=project, status=PLAIN_STATUS.get(project.status,
                                                                project.get_status_display()),
                       run_id=getattr(project, "latest_run", None))
            for project in projects]
