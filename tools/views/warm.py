"""The tool's "Start calls in a warm sandbox" switch, on its settings page (team admins)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from teams.http import AuthenticatedHttpRequest
from tools.services.warm import tool_warm_set
from tools.views.pages import _may_decide, _tool

ON = ("Calls of {name} start in a sandbox kept ready for your team: faster, and each call still"
      " starts clean.")
OFF = "Calls of {name} now start in a new sandbox each time: slower, nothing kept ready."


@login_required
@require_POST
def tool_warm(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, membership, activation = _tool(request, slug, name)
    if not _may_decide(membership, team):
        raise PermissionDenied("Only team admins change how a tool's calls start.")
    on = request.POST.get("warm_sandbox") == "on"
    tool_warm_set(activation=activation, user=request.user, on=on)
    messages.success(request, (ON if on else OFF).format(name=activation.plugin.name))
    return redirect("tools:settings", team.slug, name)
