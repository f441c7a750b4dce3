"""Comment threads on a project, a run and an approval request: the list (for live updates),
writing, changing and deleting a comment. Every form also works without JavaScript; with htmx
the thread is swapped in place."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_http_methods, require_POST

from projects.comment_forms import CommentForm
from projects.permissions import (
    get_approval_for_member,
    get_comment_for_member,
    get_project_for_member,
    get_run_for_member,
)
from projects.selectors.comments import Thread, thread_for, thread_of
from projects.services import comments as services
from runs.models import ApprovalRequest, Project, Run
from teams.http import AuthenticatedHttpRequest
from teams.models import Membership

TEMPLATE = "projects/_comments.html"


@login_required
@require_http_methods(["GET", "POST"])
def project_comments(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    project, membership = get_project_for_member(request.user, pk)
    return _thread_view(request, membership, project=project)


@login_required
@require_http_methods(["GET", "POST"])
def run_comments(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    run, membership = get_run_for_member(request.user, pk)
    return _thread_view(request, membership, project=run.project, run=run)


@login_required
@require_http_methods(["GET", "POST"])
def approval_comments(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    approval, membership = get_approval_for_member(request.user, pk)
    return _thread_view(request, membership, project=approval.project, approval=approval)


def _thread_view(request: AuthenticatedHttpRequest, membership: Membership, *,
                 project: Project, run: Run | None = None,
                 approval: ApprovalRequest | None = None) -> HttpResponse:
    def thread() -> Thread:
        return thread_for(user=request.user, membership=membership, project=project, run=run,
                          approval=approval,
                          page=request.POST.get("next") or request.GET.get("next"))

    if request.method == "GET":  # htmx re-fetches the list; a browser goes to the page
        shown = thread()
        if not request.htmx:
            return redirect(f"{shown.page}#thread-{shown.key}")
        return render(request, f"{TEMPLATE}#comment_list", {"thread": shown})
    form = CommentForm(request.POST)
    comment = None
    if form.is_valid():
        try:
            comment = services.comment_add(author=request.user, project=project, run=run,
                                           approval=approval, body=form.cleaned_data["body"])
        except services.CommentError as error:
            form.add_error("body", str(error))
    shown = thread()
    if comment is None:
        if request.htmx:
            return render(request, f"{TEMPLATE}#comment_form", {"thread": shown, "form": form})
        return _form_page(request, shown, form, heading="Your comment", action=shown.url,
                          status=400)
    if request.htmx:  # a fresh form, and the list with the new comment in its place
        context = {"thread": shown, "form": CommentForm()}
        html = (render_to_string(f"{TEMPLATE}#comment_form", context, request)
                + render_to_string(f"{TEMPLATE}#comment_list", {**context, "oob": True},
                                   request))
        return HttpResponse(html)
    messages.success(request, "Your comment was added.")
    return redirect(f"{shown.page}#comment-{comment.pk}")


@login_required
@require_http_methods(["GET", "POST"])
def comment_edit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    comment, membership = get_comment_for_member(request.user, pk)
    shown = thread_of(user=request.user, membership=membership, comment=comment,
                      page=request.POST.get("next") or request.GET.get("next"))
    if request.method == "GET":
        if not services.may_edit(comment=comment, user=request.user):
            raise PermissionDenied("Only the person who wrote a comment can change it.")
        form = CommentForm(initial={"body": comment.body})
        return _form_page(request, shown, form, heading="Change your comment",
                          action=request.path)
    form = CommentForm(request.POST)
    if form.is_valid():
        try:
            services.comment_edit(comment=comment, user=request.user,
                                  body=form.cleaned_data["body"])
        except services.CommentError as error:
            form.add_error("body", str(error))
        else:
            messages.success(request, "Your comment was changed.")
            return redirect(f"{shown.page}#comment-{comment.pk}")
    return _form_page(request, shown, form, heading="Change your comment", action=request.path,
                      status=400)


@login_required
@require_POST
def comment_delete(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    comment, membership = get_comment_for_member(request.user, pk)
    shown = thread_of(user=request.user, membership=membership, comment=comment,
                      page=request.POST.get("next"))
    services.comment_delete(comment=comment, user=request.user, membership=membership)
    messages.success(request, "The comment was deleted.")
    return redirect(f"{shown.page}#comment-{comment.pk}")


def _form_page(request: AuthenticatedHttpRequest, thread: Thread, form: CommentForm, *,
               heading: str, action: str, status: int = 200) -> HttpResponse:
    context: dict[str, object] = {"thread": thread, "form": form, "heading": heading,
                               "action": action}
    return render(request, "projects/comment_form_page.html", context, status=status)
