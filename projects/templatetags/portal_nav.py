"""The portal's part of the main navigation: Board, Reviews (count of everything waiting for the
user's decision: run gates and uploaded versions) and the notifications bell."""

from __future__ import annotations

from django import template
from django.http import HttpRequest

from projects.selectors.inbox import inbox_count
from teams.selectors.notifications import unread_count
from teams.selectors.teams import request_memberships

register = template.Library()


def nav_counts(request: HttpRequest) -> dict[str, object]:
    user = request.user
    if not user.is_authenticated:
        return {"authenticated": False}
    return {"authenticated": True, "team": getattr(request, "team", None),
            "reviews": inbox_count(user, request_memberships(request)),
            "unread": unread_count(user),
            "url_name": getattr(request.resolver_match, "url_name", "")}


@register.inclusion_tag("projects/partials/nav.html", takes_context=True)
def portal_nav(context: template.Context) -> dict[str, object]:
    request = context.get("request")
    return nav_counts(request) if request is not None else {"authenticated": False}
