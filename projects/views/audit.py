"""The audit log page: team admins and reviewers read and filter it; nobody edits it."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render

from projects.approval_forms import AuditFilterForm
from teams.audit_words import audit_sentence
from teams.http import AuthenticatedHttpRequest
from teams.permissions import get_team_for_member
from teams.selectors.audit import audit_actions, audit_entries

PAGE_SIZE = 50


@login_required
def audit_log(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, membership = get_team_for_member(request.user, slug)
    if not membership.can_review:
        raise PermissionDenied("Only the team's admins and reviewers can read its audit log.")
    form = AuditFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    entries = audit_entries(team=team, **{k: v for k, v in filters.items() if v})
    page = Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page"))
    for entry in page.object_list:
        entry.sentence = audit_sentence(entry)  # type: ignore[attr-defined]
    query = request.GET.copy()
    query.pop("page", None)
    context = {"team": team, "form": form, "page": page, "actions": audit_actions(team),
               "query": query.urlencode(), "filtered": bool(filters and any(filters.values()))}
    template = "projects/audit_log.html#entries" if request.htmx else "projects/audit_log.html"
    return render(request, template, context)
