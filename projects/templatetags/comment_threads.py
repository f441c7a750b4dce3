"""`{% comment_thread project=... run=... approval=... %}`: a comment thread on a page
(templates/projects/_comments.html). A project's thread when only the project is given."""

from __future__ import annotations

from django import template

from projects.comment_forms import CommentForm
from projects.selectors.comments import thread_for
from runs.models import ApprovalRequest, Project, Run
from teams.permissions import membership_for

register = template.Library()


@register.inclusion_tag("projects/_comments.html", takes_context=True)
def comment_thread(context: template.Context, *, project: Project, run: Run | None = None,
                   approval: ApprovalRequest | None = None,
                   live: bool = False) -> dict[str, object]:
    """`live`: the page has no socket of its own; the thread opens its run's."""
    request = context.get("request")
    membership = membership_for(request.user, project.team) if request is not None else None
    if request is None or membership is None:  # the page's view let a member in; nobody else
        return {"thread": None}
    run_id = approval.run_id if approval is not None else (run.pk if run is not None else None)
    socket = f"/ws/runs/{run_id}/" if live and run_id is not None else ""
    thread = thread_for(user=request.user, membership=membership, project=project, run=run,
                        approval=approval, page=request.get_full_path(), socket=socket)
    return {"thread": thread, "form": CommentForm(), "request": request,
            "csrf_token": context.get("csrf_token")}
