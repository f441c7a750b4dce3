"""Comments on a project, a run or an approval request: writing, editing, deleting, and who is
told. Who may do what is said once, here (`may_edit`, `may_delete`); the selector shows the
buttons with the same functions.

Who is told about a new comment (one notification per person and comment, the first reason
that applies wins):
1. the team members it **@mentions** (`@username`), never its author, never anyone outside the
   project's team;
2. for a **question** (the project's requester writing on their run while it waits for a
   person): the team's reviewers and admins;
3. everyone who wrote earlier in the same thread (a **reply** reaches them), if still a member.
An edit tells only the people it newly mentions. Edits and deletions go to the audit log with
the words before and after; a deleted comment stays in its thread as "deleted".
"""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from autocoder import realtime
from projects.models import Comment
from runs.models import ApprovalRequest, Project, Run
from teams.models import Membership
from teams.services.audit import audit_record
from teams.services.notifications import notifications_comment_send

MAX_CHARS = 10_000
EXCERPT_CHARS = 120
# "@name" not inside a word or an e-mail address; Django usernames hold letters, digits and @.+-_
MENTION = re.compile(r"(?<![\w.@+-])@([\w.@+-]+)")
EVENT_KIND = "comment.changed"


class CommentError(ValueError):
    """A comment that cannot be saved, in words for the person who wrote it."""


def mentioned_names(body: str) -> set[str]:
    """The usernames `body` mentions (a sentence's full stop after a name is not part of it)."""
    return {match.rstrip(".") for match in MENTION.findall(body)} - {""}


def may_edit(*, comment: Comment, user: User) -> bool:
    return not comment.is_deleted and comment.author_id == user.pk


def may_delete(*, comment: Comment, user: User, membership: Membership) -> bool:
    return not comment.is_deleted and (comment.author_id == user.pk or membership.is_admin)


def thread_page_url(*, project: Project, run: Run | None,
                    approval: ApprovalRequest | None) -> str:
    """Where a thread is read: an approval's page, a run's page; a project's thread is on the
    page of each of its runs (the latest one is linked)."""
    if approval is not None:
        return reverse("approval_detail", args=[approval.pk])
    if run is None:
        run = Run.objects.filter(project=project).order_by("-created_at", "-id").first()
    return reverse("run_detail", args=[run.pk]) if run is not None else reverse("board", args=[
        project.team.slug])


def comment_add(*, author: User, project: Project, run: Run | None = None,
                approval: ApprovalRequest | None = None, body: str) -> Comment:
    """A new comment in the thread of `approval`, else of `run`, else of `project`."""
    body = _checked(body)
    if approval is not None:
        run = approval.run
    is_question = (approval is None and run is not None and run.status in Run.WAITING
                   and project.requester_id == author.pk)
    with transaction.atomic():
        comment = Comment.objects.create(
            team_id=project.team_id, project=project, run=run, approval=approval, author=author,
            author_name=author.get_username(), body=body, is_question=is_question)
        _tell(comment, mentioned=mentioned_names(body), new=True)
        _publish(comment, f"New comment by {comment.author_name}.")
    return comment


def comment_edit(*, comment: Comment, user: User, body: str) -> Comment:
    if not may_edit(comment=comment, user=user):
        raise PermissionDenied("Only the person who wrote a comment can change it.")
    body = _checked(body)
    if body == comment.body:
        return comment
    before = comment.body
    with transaction.atomic():
        comment.body, comment.edited_at = body, timezone.now()
        comment.save(update_fields=["body", "edited_at"])
        audit_record(actor=user, action="comment.edit", team=comment.team, target=comment,
                     target_repr=_repr(comment), before={"body": before}, after={"body": body})
        _tell(comment, mentioned=mentioned_names(body) - mentioned_names(before), new=False)
        _publish(comment, f"{comment.author_name} changed a comment.")
    return comment


def comment_delete(*, comment: Comment, user: User, membership: Membership) -> Comment:
    if not may_delete(comment=comment, user=user, membership=membership):
        raise PermissionDenied("Only the person who wrote a comment, or a team admin, can "
                               "delete it.")
    before = {"body": comment.body, "author": comment.author_name}
    with transaction.atomic():
        comment.body, comment.deleted_at = "", timezone.now()
        comment.deleted_by_name = user.get_username()
        comment.save(update_fields=["body", "deleted_at", "deleted_by_name"])
        audit_record(actor=user, action="comment.delete", team=comment.team, target=comment,
                     target_repr=_repr(comment), before=before,
                     after={"deleted_by": comment.deleted_by_name})
        _publish(comment, f"{comment.deleted_by_name} deleted a comment.")
    return comment


def _checked(body: str) -> str:
    body = body.strip()
    if not body:
        raise CommentError("Write something first: the comment is empty.")
    if len(body) > MAX_CHARS:
        raise CommentError(f"A comment can be at most {MAX_CHARS} characters long; this one "
                           f"has {len(body)}.")
    return body


def _where(comment: Comment) -> str:
    name = comment.project.name
    if comment.approval is not None:
        return f"the {comment.approval.get_kind_display().lower()} request of “{name}”"
    if comment.run_id is not None:
        return f"“{name}” (run {comment.run_id})"
    return f"“{name}”"


def _repr(comment: Comment) -> str:
    return f"comment {comment.pk} by {comment.author_name} on {_where(comment)}"


def _excerpt(body: str) -> str:
    words = " ".join(body.split())
    return words if len(words) <= EXCERPT_CHARS else words[:EXCERPT_CHARS - 1].rstrip() + "…"


def _tell(comment: Comment, *, mentioned: set[str], new: bool) -> None:
    """Notify who should hear about `comment` (see the module's docstring)."""
    team_members = Membership.objects.filter(team_id=comment.team_id)
    author, where, said = comment.author_name, _where(comment), _excerpt(comment.body)
    messages: dict[int, str] = {}

    def tell(user_ids: list[int], message: str) -> None:
        for user_id in user_ids:
            if user_id != comment.author_id:
                messages.setdefault(user_id, message)

    if mentioned:
        tell(list(team_members.filter(user__username__in=mentioned)
                  .values_list("user_id", flat=True)),
             f"{author} mentioned you about {where}: “{said}”")
    if new and comment.is_question:
        tell(list(team_members.filter(role__in=[Membership.Role.REVIEWER, Membership.Role.ADMIN])
                  .values_list("user_id", flat=True)),
             f"{author} asks about {where}, which waits for a person: “{said}”")
    if new:
        earlier = (Comment.objects.filter(project_id=comment.project_id, run=comment.run,
                                          approval=comment.approval, deleted_at=None,
                                          author__isnull=False)
                   .exclude(pk=comment.pk).values_list("author_id", flat=True).distinct())
        tell([user_id for user_id in earlier if user_id is not None],
             f"{author} replied about {where}: “{said}”")
    if messages:
        url = thread_page_url(project=comment.project, run=comment.run,
                              approval=comment.approval) + f"#comment-{comment.pk}"
        notifications_comment_send(team=comment.project.team, messages=messages, url=url)


def _publish(comment: Comment, message: str) -> None:
    """Every open page of the thread re-fetches it: a run's and an approval's threads through
    the run's socket, a project's through the sockets of each of its runs."""
    if comment.run_id is not None:
        run_ids = [comment.run_id]
    else:
        run_ids = list(Run.objects.filter(project_id=comment.project_id)
                       .values_list("pk", flat=True))
    payload = {"kind": EVENT_KIND, "data": {"thread": comment.thread_key,
                                            "comment_id": comment.pk, "message": message}}

    def send() -> None:
        for run_id in run_ids:
            realtime.publish(realtime.run_group(run_id), payload)

    transaction.on_commit(send, robust=True)
