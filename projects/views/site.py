"""Site settings for teams (/settings/teams/): who may start a team and the budgets a new team
starts with. Site admins only; for anyone else the page does not exist (as the Model page)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render

from autocoder.money import currency
from projects.forms import SiteTeamSettingsForm
from projects.views.teams import generation_switch_context
from teams.http import AuthenticatedHttpRequest
from teams.permissions import require_site_admin
from teams.selectors.site import site_team_settings_get, site_team_settings_history
from teams.services.site import site_team_settings_update


@login_required
def site_team_settings(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_site_admin(request.user)
    form = SiteTeamSettingsForm(request.POST or None, instance=site_team_settings_get())
    if request.method == "POST" and form.is_valid():
        site_team_settings_update(actor=request.user, **form.cleaned_data)
        messages.success(request, "Saved. New teams follow these settings from now on.")
        return redirect("site_team_settings")
    return render(request, "projects/site_team_settings.html", {
        "form": form, "history": site_team_settings_history(), "currency": currency(),
        **generation_switch_context(None)})
