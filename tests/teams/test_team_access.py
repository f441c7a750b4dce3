"""Three users per access rule: the team's admin (owner), a plain member, and an outsider."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from teams.models import Team

pytestmark = pytest.mark.django_db


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_team_page_owner_and_member_see_it_outsider_gets_404(team_with_roles: dict) -> None:
    url = reverse("team_detail", args=["acme"])
    for role in ("owner", "member"):
        response = client_for(team_with_roles[role]).get(url)
        assert response.status_code == 200, role
        assert team_with_roles["member"].username in response.content.decode()
    assert client_for(team_with_roles["outsider"]).get(url).status_code == 404


def test_missing_team_and_foreign_team_look_the_same_to_an_outsider(team_with_roles: dict) -> None:
    outsider = client_for(team_with_roles["outsider"])
    missing = outsider.get(reverse("team_detail", args=["no-such-team"]))
    foreign = outsider.get(reverse("team_detail", args=["acme"]))
    assert missing.status_code == foreign.status_code == 404


def test_settings_owner_edits_member_forbidden_outsider_404(team_with_roles: dict) -> None:
    url = reverse("team_settings", args=["acme"])
    data = {"requester_may_approve": "on", "required_approvals": "2"}
    assert client_for(team_with_roles["member"]).post(url, data).status_code == 403
    assert client_for(team_with_roles["outsider"]).post(url, data).status_code == 404
    team = Team.objects.get(slug="acme")
    assert (team.requester_may_approve, team.required_approvals) == (False, 1)

    response = client_for(team_with_roles["owner"]).post(url, data, follow=True)
    assert "Team settings saved." in response.content.decode()
    team.refresh_from_db()
    assert (team.requester_may_approve, team.required_approvals) == (True, 2)


def test_settings_validation_error_is_shown_next_to_the_field(team_with_roles: dict) -> None:
    url = reverse("team_settings", args=["acme"])
    response = client_for(team_with_roles["owner"]).post(url, {"required_approvals": "9"})
    assert response.status_code == 200
    assert "Choose between 1 and 5 approvals." in response.content.decode()


def test_anonymous_users_are_sent_to_log_in() -> None:
    response = Client().get(reverse("team_detail", args=["acme"]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_team_switcher_only_switches_to_own_teams(team_with_roles: dict) -> None:
    member = client_for(team_with_roles["member"])
    assert member.post(reverse("team_switch"), {"team": "other"}).status_code == 404
    response = member.post(reverse("team_switch"), {"team": "acme"}, follow=True)
    assert "You are now working in Acme." in response.content.decode()


def test_home_shows_teams_or_a_helpful_empty_state(team_with_roles: dict) -> None:
    from tests.factories import UserFactory

    home = client_for(team_with_roles["member"]).get(reverse("home")).content.decode()
    assert "Acme" in home and "Other" not in home
    lonely = client_for(UserFactory()).get(reverse("home")).content.decode()
    assert "You are not in a team yet" in lonely
