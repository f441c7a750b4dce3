"""Per-object access helpers used by every view: outsiders get 404, members lacking a role 403.

A 404 for outsiders means another team's objects are indistinguishable from missing ones.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from projects.models import Comment, Interview, Membership, Project, Team
from projects.selectors.site import is_site_admin
from projects.selectors.teams import with_teams
from runs.models import ApprovalRequest, Run


def require_site_admin(user: User | AnonymousUser) -> None:
    """Pages of the whole site's settings: for anyone but a site admin they do not exist."""
    if not is_site_admin(user):
        raise Http404("No such page")


def membership_for(user: User | AnonymousUser, team: Team) -> Membership | None:
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(team=team, user=user).first()


def get_team_for_member(user: User | AnonymousUser,
                        slug: str) -> tuple[Team, Membership]:
    """The team with `slug` and the user's membership, or 404 when the user is not in it
    (one query: every team page starts with it)."""
    if not user.is_authenticated:
        raise Http404("No such team")
    user_id = user.pk
    found = with_teams(("team-member", slug, user_id), lambda: Membership.objects.filter(
        team__slug=slug, user_id=user_id))
    if not found:
        raise Http404("No such team")
    return found[0].team, found[0]


def get_team_for_admin(user: User | AnonymousUser,
                       slug: str) -> tuple[Team, Membership]:
    team, membership = get_team_for_member(user, slug)
    if not membership.is_admin:
        raise PermissionDenied("Only team admins can change team settings.")
    return team, membership


def _membership_or_404(user: User | AnonymousUser, team: Team) -> Membership:
    membership = membership_for(user, team)
    if membership is None:
        raise Http404("Not found")
    return membership


def get_project_for_member(user: User | AnonymousUser,
                           pk: int) -> tuple[Project, Membership]:
    """The project `pk` and the user's membership of its team, or 404 for outsiders."""
    project = Project.objects.select_related("team", "requester").filter(pk=pk).first()
    if project is None:
        raise Http404("No such project")
    return project, _membership_or_404(user, project.team)


def get_run_for_member(user: User | AnonymousUser, pk: int) -> tuple[Run, Membership]:
    """The run `pk` (with its project and team) and the user's membership, or 404 for outsiders."""
    run = Run.objects.select_related("project__team", "project__requester").filter(pk=pk).first()
    if run is None:
        raise Http404("No such run")
    return run, _membership_or_404(user, run.project.team)


def get_approval_for_member(user: User | AnonymousUser,
                            pk: int) -> tuple[ApprovalRequest, Membership]:
    """The approval request `pk` and the user's membership of its team, or 404 for outsiders."""
    approval = (ApprovalRequest.objects
                .select_related("run", "project__team", "project__requester", "decided_by")
                .filter(pk=pk).first())
    if approval is None:
        raise Http404("No such approval request")
    return approval, _membership_or_404(user, approval.project.team)


def get_interview_for_member(user: User | AnonymousUser,
                             pk: int) -> tuple[Interview, Membership]:
    """The interview `pk` and the user's membership of its team, or 404 for outsiders."""
    interview = Interview.objects.select_related("team", "project", "requester").filter(
        pk=pk).first()
    if interview is None:
        raise Http404("No such request")
    return interview, _membership_or_404(user, interview.team)


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
    return comment, _membership_or_404(user, comment.team)
