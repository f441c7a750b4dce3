"""Invitations: a team admin invites (and withdraws), the invited person accepts or declines.

The admin's answer is the same whether an account has the name or not; someone else's
invitation is a 404 like anything a person may not see."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from projects.forms import InvitationForm
from projects.middleware import SESSION_KEY
from projects.views.teams import team_page
from teams.http import AuthenticatedHttpRequest
from teams.models import Invitation
from teams.models.invitations import LIFETIME
from teams.permissions import get_team_for_admin
from teams.selectors.invitations import invitation_open_for, invitations_open_for
from teams.services import invitations as services


@login_required
@require_POST
def team_invite(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, membership = get_team_for_admin(request.user, slug)
    form = InvitationForm(request.POST)
    if not form.is_valid():
        return team_page(request, team, membership, form, status=400)
    try:
        services.invitation_send(team=team, invited_as=form.cleaned_data["invited_as"],
                                 role=form.cleaned_data["role"], actor=request.user)
    except services.InvitationError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, services.SENT_MESSAGE.format(team=team.name,
                                                               days=LIFETIME.days))
    return redirect("team_detail", slug=team.slug)


@login_required
@require_POST
def team_invitation_withdraw(request: AuthenticatedHttpRequest, slug: str,
                             pk: int) -> HttpResponse:
    team, _ = get_team_for_admin(request.user, slug)
    invitation = get_object_or_404(Invitation.objects.select_related("team"), pk=pk, team=team)
    try:
        services.invitation_withdraw(invitation=invitation, actor=request.user)
    except services.InvitationError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"The invitation of {invitation.invited_as} is withdrawn.")
    return redirect("team_detail", slug=team.slug)


@login_required
def invitation_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The signed-in person's invitations that wait for their answer."""
    return render(request, "projects/invitation_list.html",
                  {"invitations": invitations_open_for(request.user)})


def _mine(request: AuthenticatedHttpRequest, pk: int) -> Invitation:
    invitation = invitation_open_for(request.user, pk)
    if invitation is None:
        raise Http404("No such invitation")
    return invitation


@login_required
@require_POST
def invitation_accept(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    invitation = _mine(request, pk)
    try:
        membership = services.invitation_accept(invitation=invitation, user=request.user)
    except services.InvitationError as error:
        messages.error(request, str(error))
        return redirect("invitation_list")
    request.session[SESSION_KEY] = invitation.team.slug
    messages.success(request, f"Welcome to {invitation.team.name}: you are "
                              f"{membership.get_role_display().lower()} here.")
    return redirect("team_detail", slug=invitation.team.slug)


@login_required
@require_POST
def invitation_decline(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    invitation = _mine(request, pk)
    try:
        services.invitation_decline(invitation=invitation, user=request.user)
    except services.InvitationError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"You declined the invitation to {invitation.team.name}.")
    return redirect("invitation_list")
