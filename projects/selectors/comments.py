"""Reads of comment threads: a thread's comments, rendered, with what the reader may do."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from autocoder.markdown import render_markdown
from projects.models import Comment
from projects.services.comments import MAX_CHARS, may_delete, may_edit, thread_page_url
from runs.models import ApprovalRequest, Project, Run
from teams.models import Membership


@dataclass(frozen=True)
class ShownComment:
    comment: Comment
    html: str
    may_edit: bool
    may_delete: bool


@dataclass(frozen=True)
class Thread:
    key: str  # project-1, run-2, approval-3 (live events name it)
    title: str
    intro: str
    url: str  # GET: the list (htmx); POST: a new comment
    page: str  # the page showing it, where forms lead back to
    socket: str  # a websocket to open for live updates ("" when the page has one)
    asks_question: bool  # the reader's comment would be a question to the reviewers
    comments: list[ShownComment] = field(default_factory=list)
    max_chars: int = MAX_CHARS


def render_comment(body: str) -> str:
    """Markdown to HTML with the sanitising of plugin READMEs: no scripts, no event handlers,
    no javascript: links, no images."""
    return render_markdown(body)


def safe_page(path: str | None, *, default: str) -> str:
    """`path` when it is a page of this site, else `default` (no open redirects)."""
    if path and path.startswith("/") and url_has_allowed_host_and_scheme(path, allowed_hosts=None):
        return path
    return default


def thread_for(*, user: User, membership: Membership, project: Project, run: Run | None = None,
               approval: ApprovalRequest | None = None, page: str | None = None,
               socket: str = "") -> Thread:
    """The thread of `approval`, else of `run`, else of `project`, as `user` sees it."""
    if approval is not None:
        run = approval.run
        key, url = f"approval-{approval.pk}", reverse("approval_comments", args=[approval.pk])
        title, intro = "Talk about this review", (
            "Ask or explain something about this decision. Write @name to tell a team member.")
        comments = Comment.objects.filter(approval=approval)
    elif run is not None:
        key, url = f"run-{run.pk}", reverse("run_comments", args=[run.pk])
        title, intro = "About this run", (
            "Questions and notes about this run. Write @name to tell a team member.")
        comments = Comment.objects.filter(run=run, approval=None)
    else:
        key, url = f"project-{project.pk}", reverse("project_comments", args=[project.pk])
        title, intro = "About this request", (
            "Talk about what was asked for; this thread is the same on every run of the "
            "request. Write @name to tell a team member.")
        comments = Comment.objects.filter(project=project, run=None)
    asks = (key.startswith("run-") and run is not None and run.status in Run.WAITING
            and project.requester_id == user.pk)
    shown = [ShownComment(comment=c, html="" if c.is_deleted else render_comment(c.body),
                          may_edit=may_edit(comment=c, user=user),
                          may_delete=may_delete(comment=c, user=user, membership=membership))
             for c in comments.order_by("created_at", "id")]
    default = thread_page_url(project=project, run=run, approval=approval)
    return Thread(key=key, title=title, intro=intro, url=url,
                  page=safe_page(page, default=default), socket=socket,
                  asks_question=asks, comments=shown)


def thread_of(*, user: User, membership: Membership, comment: Comment,
              page: str | None = None) -> Thread:
    return thread_for(user=user, membership=membership, project=comment.project,
                      run=comment.run, approval=comment.approval, page=page)
