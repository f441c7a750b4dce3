"""Team admins manage members in the portal (not only in the Django admin); anyone may start a
team. Every change is in the audit log; a team always keeps an admin."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from projects.models import AuditEntry, Membership, Team
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_admin_adds_a_member_changes_the_role_and_removes_them(team_with_roles: dict) -> None:
    admin = client_for(team_with_roles["owner"])
    newcomer = UserFactory(username="newcomer")
    page = admin.post(reverse("team_member_add", args=["acme"]),
                      {"username": "Newcomer", "role": "requester"}, follow=True)
    assert "newcomer is now in" in page.content.decode()
    member = Membership.objects.get(team__slug="acme", user=newcomer)
    assert member.role == "requester"
    admin.post(reverse("team_member_role", args=["acme", member.pk]), {"role": "reviewer"})
    assert Membership.objects.get(pk=member.pk).role == "reviewer"
    admin.post(reverse("team_member_remove", args=["acme", member.pk]))
    assert not Membership.objects.filter(pk=member.pk).exists()
    assert client_for(newcomer).get(reverse("team_detail", args=["acme"])).status_code == 404
    actions = list(AuditEntry.objects.filter(team__slug="acme").values_list("action", flat=True))
    assert {"team.member_add", "team.member_role", "team.member_remove"} <= set(actions)


def test_an_unknown_user_name_is_a_form_error_that_says_who_creates_accounts(
        team_with_roles: dict) -> None:
    response = client_for(team_with_roles["owner"]).post(
        reverse("team_member_add", args=["acme"]), {"username": "nobody", "role": "requester"})
    assert response.status_code == 400
    assert "No account is called “nobody”" in response.content.decode()


def test_only_admins_manage_members_and_outsiders_see_nothing(team_with_roles: dict) -> None:
    target = Membership.objects.get(team__slug="acme", user=team_with_roles["member"])
    url = reverse("team_member_role", args=["acme", target.pk])
    assert client_for(team_with_roles["member"]).post(url, {"role": "admin"}).status_code == 403
    assert client_for(team_with_roles["outsider"]).post(url, {"role": "admin"}).status_code == 404
    assert Membership.objects.get(pk=target.pk).role == target.role
    page = client_for(team_with_roles["member"]).get(reverse("team_detail", args=["acme"]))
    assert "Add a member" not in page.content.decode()


def test_the_last_admin_cannot_leave_or_step_down(team_with_roles: dict) -> None:
    owner = team_with_roles["owner"]
    mine = Membership.objects.get(team__slug="acme", user=owner)
    admin = client_for(owner)
    for url, data in ((reverse("team_member_role", args=["acme", mine.pk]), {"role": "reviewer"}),
                      (reverse("team_member_remove", args=["acme", mine.pk]), {})):
        page = admin.post(url, data, follow=True).content.decode()
        assert "A team needs at least one admin" in page
    assert Membership.objects.get(pk=mine.pk).role == "admin"


def test_anyone_may_start_a_team_and_becomes_its_admin(team_with_roles: dict) -> None:
    loner = UserFactory(username="founder")
    response = client_for(loner).post(reverse("team_new"), {"name": "Finance", "slug": "finance"})
    assert response.status_code == 302
    team = Team.objects.get(slug="finance")
    assert Membership.objects.get(team=team, user=loner).role == "admin"
    taken = client_for(loner).post(reverse("team_new"), {"name": "Acme 2", "slug": "acme"})
    assert taken.status_code == 200 and "already exists" in taken.content.decode()
