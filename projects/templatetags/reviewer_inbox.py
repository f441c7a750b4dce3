"""The home page's "Waiting for you": the oldest things waiting for the user's decision (run
gates and uploaded plugin versions), each linking to where it is decided."""

from __future__ import annotations

from django import template

from projects.selectors.inbox import inbox_page
from teams.selectors.teams import request_memberships

register = template.Library()

SHOWN = 5


@register.inclusion_tag("projects/partials/waiting_for_you.html", takes_context=True)
def waiting_for_you(context: template.Context) -> dict[str, object]:
    request = context.get("request")
    if request is None or not request.user.is_authenticated:
        return {"items": [], "total": 0, "decides": False}
    memberships = request_memberships(request)
    page = inbox_page(request.user, 1, per_page=SHOWN, memberships=memberships)
    return {"items": page.object_list, "total": page.paginator.count,
            # Whoever decides anywhere hears that nothing waits; a requester is not told.
            "decides": any(m.can_review or m.team.requester_may_approve for m in memberships)}
