from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from autocoder.money import money
from projects.forms import InvitationForm, MemberRoleForm, TeamCreateForm, TeamSettingsForm
from projects.middleware import SESSION_KEY
from projects.selectors.interviews import interviews_unfinished_for_user
from projects.selectors.requests import requests_for_user
from projects.views.broker import broker_reachable, broker_unavailable
from runs.budgets import month_budget_state, month_spent
from runs.services.generation import generation_mode_change
from teams.http import AuthenticatedHttpRequest
from teams.models import GenerationMode, Membership, Team
from teams.models.invitations import LIFETIME
from teams.permissions import get_team_for_admin, get_team_for_member, require_site_admin
from teams.selectors import team_members, teams_for_user
from teams.selectors.generation import generation_state
from teams.selectors.invitations import TEAM_PAGE_DAYS, invitations_open_for, team_invitations
from teams.selectors.site import is_site_admin, team_creation_allowed
from teams.services import teams as services


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(request, "projects/home.html", {
        "teams": teams_for_user(request.user),
        "unfinished": interviews_unfinished_for_user(request.user),
        "requests": requests_for_user(request.user),
        "invitations": list(invitations_open_for(request.user)),
        "may_start_team": team_creation_allowed(request.user)})


@login_required
def team_detail(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, membership = get_team_for_member(request.user, slug)
    request.session[SESSION_KEY] = team.slug
    return team_page(request, team, membership, InvitationForm())


def team_page(request: AuthenticatedHttpRequest, team: Team, membership: Membership,
              invite_form: InvitationForm, status: int = 200) -> HttpResponse:
    """The team page; its admins also see the invitation form and the team's invitations."""
    context = {"team": team, "membership": membership, "members": team_members(team),
               "invite_form": invite_form, "role_choices": Membership.Role.choices,
               "invitations": team_invitations(team) if membership.is_admin else [],
               "invitation_days": LIFETIME.days, "invitation_history_days": TEAM_PAGE_DAYS,
               "month_budget": month_budget_state(team),
               "month_spent": money(month_spent(team)),
               "run_budget": money(team.run_budget) if team.run_budget else ""}
    return render(request, "projects/team_detail.html", context, status=status)


@login_required
@require_POST
def team_member_role(request: AuthenticatedHttpRequest, slug: str, pk: int) -> HttpResponse:
    team, _ = get_team_for_admin(request.user, slug)
    member = get_object_or_404(Membership.objects.select_related("user", "team"), pk=pk, team=team)
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
        return redirect("team_detail", slug=team.slug)
    try:
        services.membership_role_change(membership=member, role=form.cleaned_data["role"],
                                        actor=request.user)
    except services.MembershipError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"{member.user.get_username()} is now "
                                  f"{member.get_role_display().lower()}.")
    return redirect("team_detail", slug=team.slug)


@login_required
@require_POST
def team_member_remove(request: AuthenticatedHttpRequest, slug: str, pk: int) -> HttpResponse:
    team, _ = get_team_for_admin(request.user, slug)
    member = get_object_or_404(Membership.objects.select_related("user", "team"), pk=pk, team=team)
    try:
        services.membership_remove(membership=member, actor=request.user)
    except services.MembershipError as error:
        messages.error(request, str(error))
        return redirect("team_detail", slug=team.slug)
    messages.success(request, f"{member.user.get_username()} is no longer in {team.name}.")
    if member.user_id == request.user.pk:
        return redirect("home")
    return redirect("team_detail", slug=team.slug)


@login_required
def team_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Whoever the site lets start a team (its site settings) becomes its first admin; anyone
    else reads who to ask (403)."""
    if not team_creation_allowed(request.user):
        return render(request, "projects/team_new.html",
                      {"refused": services.TEAM_CREATION_REFUSED}, status=403)
    form = TeamCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = services.team_create(creator=request.user, **form.cleaned_data)
        request.session[SESSION_KEY] = team.slug
        messages.success(request, f"Team {team.name} created: invite its members below.")
        return redirect("team_detail", slug=team.slug)
    return render(request, "projects/team_new.html", {"form": form})


@login_required
def team_settings(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, _ = get_team_for_admin(request.user, slug)
    form = TeamSettingsForm(request.POST or None, instance=team)
    if request.method == "POST" and form.is_valid():
        services.team_settings_update(team=team, actor=request.user, **form.cleaned_data)
        messages.success(request, "Team settings saved.")
        return redirect("team_detail", slug=team.slug)
    return render(request, "projects/team_settings.html", {
        "team": team, "form": form, "site_admin": is_site_admin(request.user),
        **generation_switch_context(team)})


def generation_switch_context(team: Team | None) -> dict[str, object]:
    """What the Generation section shows (templates/projects/partials/generation_switch.html)."""
    state = generation_state(team=team)
    return {"state": state, "switch_team": team,
            "switch_mode": team.generation_mode if team is not None else state.site_mode,
            "switch_action": reverse("team_generation", args=[team.slug]) if team is not None
            else reverse("site_generation")}


@login_required
@require_POST
def team_generation(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, _ = get_team_for_admin(request.user, slug)
    return _generation_save(request, team, redirect_to=reverse("team_settings", args=[slug]))


@login_required
@require_POST
def site_generation(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_site_admin(request.user)
    return _generation_save(request, None, redirect_to=reverse("site_team_settings"))


def _generation_save(request: AuthenticatedHttpRequest, team: Team | None, *,
                     redirect_to: str) -> HttpResponse:
    mode = request.POST.get("mode", "")
    if mode not in GenerationMode.values:
        messages.error(request, "Choose automatic, manual or paused.")
        return redirect(f"{redirect_to}#generation")
    if mode != GenerationMode.PAUSED and not broker_reachable():
        return broker_unavailable(request)  # runs going on again are sent to the workers
    released = generation_mode_change(actor=request.user, mode=mode, team=team)
    label = GenerationMode(mode).label.lower()
    going_on = f" {len(released)} waiting run(s) go on." if released else ""
    messages.success(request, f"Generation is now {label}"
                              f"{' for this team' if team else ' for every team'}.{going_on}")
    return redirect(f"{redirect_to}#generation")


@login_required
@require_POST
def team_switch(request: AuthenticatedHttpRequest) -> HttpResponse:
    team, _ = get_team_for_member(request.user, request.POST.get("team", ""))
    request.session[SESSION_KEY] = team.slug
    messages.info(request, f"You are now working in {team.name}.")
    return redirect("team_detail", slug=team.slug)
