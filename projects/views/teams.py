from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from projects.forms import TeamSettingsForm
from projects.http import AuthenticatedHttpRequest
from projects.middleware import SESSION_KEY
from projects.permissions import get_team_for_admin, get_team_for_member
from projects.selectors import team_members, teams_for_user
from projects.selectors.interviews import interviews_unfinished_for_user
from projects.services import teams as services


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(request, "projects/home.html", {
        "teams": teams_for_user(request.user),
        "unfinished": interviews_unfinished_for_user(request.user)})


@login_required
def team_detail(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, membership = get_team_for_member(request.user, slug)
    request.session[SESSION_KEY] = team.slug
    context = {"team": team, "membership": membership, "members": team_members(team)}
    return render(request, "projects/team_detail.html", context)


@login_required
def team_settings(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, _ = get_team_for_admin(request.user, slug)
    form = TeamSettingsForm(request.POST or None, instance=team)
    if request.method == "POST" and form.is_valid():
        services.team_settings_update(team=team, actor=request.user, **form.cleaned_data)
        messages.success(request, "Team settings saved.")
        return redirect("team_detail", slug=team.slug)
    return render(request, "projects/team_settings.html", {"team": team, "form": form})


@login_required
@require_POST
def team_switch(request: AuthenticatedHttpRequest) -> HttpResponse:
    team, _ = get_team_for_member(request.user, request.POST.get("team", ""))
    request.session[SESSION_KEY] = team.slug
    messages.info(request, f"You are now working in {team.name}.")
    return redirect("team_detail", slug=team.slug)
