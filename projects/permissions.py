"""Per-object access helpers of the portal's views: outsiders get 404, members lacking a role 403.

They build on the teams app's helpers (teams/permissions.py: a team, its admins, the site's).
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from projects.models import Comment, Interview
from runs.models import ApprovalRequest, Project, Run
from teams.models import Membership
from teams.permissions import membership_or_404


def get_project_for_member(user: User | AnonymousUser,
                           pk: int) -> tuple[Project, Membership]:
    """The project `pk` and the user's membership of its team, or 404 for outsiders."""
    project = Project.objects.select_related("team", "requester").filter(pk=pk).first()
    if project is None:
        raise Http404("No such project")
    return project, membership_or_404(user, project.team)


def get_run_for_member(user: User | AnonymousUser, pk: int) -> tuple[Run, Membership]:
    """The run `pk` (with its project and team) and the user's membership, or 404 for outsiders."""
    run = Run.objects.select_related("project__team", "project__requester").filter(pk=pk).first()
    if run is None:
        raise Http404("No such run")
    return run, membership_or_404(user, run.project.team)


def get_approval_for_member(user: User | AnonymousUser,
                            pk: int) -> tuple[ApprovalRequest, Membership]:
    """The approval request `pk` and the user's membership of its team, or 404 for outsiders."""
    approval = (ApprovalRequest.objects
                .select_related("run", "project__team", "project__requester", "decided_by")
                .filter(pk=pk).first())
    if approval is None:
        raise Http404("No such approval request")
    return approval, membership_or_404(user, approval.project.team)


def get_interview_for_member(user: User | AnonymousUser,
                             pk: int) -> tuple[Interview, Membership]:
    """The interview `pk` and the user's membership of its team, or 404 for outsiders."""
    interview = Interview.objects.select_related("team", "project", "requester").filter(
        pk=pk).first()
    if interview is None:
        raise Http404("No such request")
    return interview, membership_or_404(user, interview.team)


def get_interview_for_editor(user: User | AnonymousUser,
                             pk: int) -> tuple[Interview, Membership]:
    """Only the requester and the team's reviewers and admins may change an interview."""
    interview, membership = get_interview_for_member(user, pk)
    if interview.requester_id != user.pk and not membership.can_review:
        raise PermissionDenied("Only the person who made this request, or a reviewer, can "
                               "change it.")
    return interview, membership


def get_comment_for_member(user: User | AnonymousUser, pk: int) -> tuple[Comment, Membership]:
    """The comment `pk` (with its thread's project, run and approval) and the user's membership
    of its team, or 404 for outsiders. Who may edit or delete it: projects/services/comments.py."""
    comment = (Comment.objects.select_related("team", "project__team", "run", "approval")
               .filter(pk=pk).first())
    if comment is None:
        raise Http404("No such comment")
    return comment, membership_or_404(user, comment.team)
