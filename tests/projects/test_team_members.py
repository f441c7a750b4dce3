"""Team admins manage members in the portal (not only in the Django admin): they invite people
(tests/projects/test_invitations.py), change roles and remove members. Who may start a team:
tests/projects/test_team_creation.py. Every change is in the audit log; a team always keeps an
admin."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from teams.models import AuditEntry, Invitation, Membership
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_admin_invites_a_member_changes_the_role_and_removes_them(
        team_with_roles: dict) -> None:
    admin = client_for(team_with_roles["owner"])
    newcomer = UserFactory(username="newcomer")
    page = admin.post(reverse("team_invite", args=["acme"]),
                      {"invited_as": "Newcomer", "role": "requester"}, follow=True)
    assert "If an account with that name exists, it has been invited" in page.content.decode()
    assert not Membership.objects.filter(team__slug="acme", user=newcomer).exists()
    invitation = Invitation.objects.get(team__slug="acme", user=newcomer)
    client_for(newcomer).post(reverse("invitation_accept", args=[invitation.pk]))
    member = Membership.objects.get(team__slug="acme", user=newcomer)
    assert member.role == "requester"
    admin.post(reverse("team_member_role", args=["acme", member.pk]), {"role": "reviewer"})
    assert Membership.objects.get(pk=member.pk).role == "reviewer"
    admin.post(reverse("team_member_remove", args=["acme", member.pk]))
    assert not Membership.objects.filter(pk=member.pk).exists()
    assert client_for(newcomer).get(reverse("team_detail", args=["acme"])).status_code == 404
    actions = list(AuditEntry.objects.filter(team__slug="acme").values_list("action", flat=True))
    assert {"team.invite", "team.invitation_accept", "team.member_role",
            "team.member_remove"} <= set(actions)


def test_only_admins_manage_members_and_outsiders_see_nothing(team_with_roles: dict) -> None:
    target = Membership.objects.get(team__slug="acme", user=team_with_roles["member"])
    url = reverse("team_member_role", args=["acme", target.pk])
    assert client_for(team_with_roles["member"]).post(url, {"role": "admin"}).status_code == 403
    assert client_for(team_with_roles["outsider"]).post(url, {"role": "admin"}).status_code == 404
    assert Membership.objects.get(pk=target.pk).role == target.role
    page = client_for(team_with_roles["member"]).get(reverse("team_detail", args=["acme"]))
    assert "Invite someone" not in page.content.decode()


def test_the_last_admin_cannot_leave_or_step_down(team_with_roles: dict) -> None:
    owner = team_with_roles["owner"]
    mine = Membership.objects.get(team__slug="acme", user=owner)
    admin = client_for(owner)
    for url, data in ((reverse("team_member_role", args=["acme", mine.pk]), {"role": "reviewer"}),
                      (reverse("team_member_remove", args=["acme", mine.pk]), {})):
        page = admin.post(url, data, follow=True).content.decode()
        assert "A team needs at least one admin" in page
    assert Membership.objects.get(pk=mine.pk).role == "admin"
