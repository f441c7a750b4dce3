"""Who may start a team is a site setting (default: site admins only), set by site admins on
/settings/teams/ and audited; a new team starts with the site's default budgets.

Three users per rule where it matters: a team admin (alice, admin of acme), a member (quinn,
requester) and an outsider (a signed-in person in no team); the site admin is a fourth."""

from __future__ import annotations

import html
from decimal import Decimal

import pytest
from django.contrib.auth.models import AbstractUser
from django.urls import reverse

from teams.models import AuditEntry, Membership, SiteTeamSettings, Team
from teams.services import demo_data_ensure
from tests.factories import UserFactory
from tests.teams.conftest import Portal

pytestmark = pytest.mark.django_db

REFUSED = "Only site administrators can start a team here."


@pytest.fixture
def site_admin(db: None) -> AbstractUser:
    return UserFactory(username="root", is_staff=True)


def start_team(portal: Portal, user: AbstractUser, slug: str) -> int:
    response = portal.client(user).post(reverse("team_new"), {"name": slug.title(),
                                                              "slug": slug})
    return response.status_code


def save_site_settings(portal: Portal, user: AbstractUser, **values: str) -> int:
    data = {"team_creation": "site_admins", "default_monthly_budget": "",
            "default_run_budget": "", **values}
    return portal.client(user).post(reverse("site_team_settings"), data).status_code


def test_by_default_only_site_admins_start_teams(portal: Portal,
                                                 site_admin: AbstractUser) -> None:
    loner = UserFactory(username="loner")
    for number, user in enumerate((portal.admin, portal.requester, loner)):
        page = portal.client(user).get(reverse("team_new"))
        assert page.status_code == 403 and REFUSED in page.content.decode()
        assert start_team(portal, user, f"refused-{number}") == 403
        home = portal.client(user).get(reverse("home")).content.decode()
        assert reverse("team_new") not in home
    assert not Team.objects.filter(slug__startswith="refused").exists()
    anonymous = portal.client(None).get(reverse("team_new"))
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]

    assert portal.client(site_admin).get(reverse("team_new")).status_code == 200
    assert start_team(portal, site_admin, "finance") == 302
    assert Membership.objects.get(team__slug="finance", user=site_admin).role == "admin"


def test_a_site_admin_lets_anyone_start_teams_and_it_is_audited(
        portal: Portal, site_admin: AbstractUser) -> None:
    assert save_site_settings(portal, site_admin, team_creation="anyone") == 302
    entry = AuditEntry.objects.get(action="site.team_settings")
    assert entry.team_id is None and entry.actor_id == site_admin.pk
    assert entry.before == {"team_creation": "site_admins"}
    assert entry.after == {"team_creation": "anyone"}
    page = portal.client(site_admin).get(reverse("site_team_settings")).content.decode()
    assert "Only site administrators → Anyone who can sign in" in html.unescape(page)

    loner = UserFactory(username="founder")
    assert start_team(portal, loner, "founders") == 302
    assert Membership.objects.get(team__slug="founders", user=loner).role == "admin"
    taken = portal.client(loner).post(reverse("team_new"), {"name": "Acme 2", "slug": "acme"})
    assert taken.status_code == 200 and "already exists" in taken.content.decode()


def test_the_site_settings_are_for_site_admins_only(portal: Portal,
                                                    site_admin: AbstractUser) -> None:
    url = reverse("site_team_settings")
    for user in (portal.admin, portal.requester, UserFactory(username="loner")):
        assert portal.client(user).get(url).status_code == 404
        assert save_site_settings(portal, user, team_creation="anyone") == 404
    assert not SiteTeamSettings.objects.exists()
    assert not AuditEntry.objects.filter(action="site.team_settings").exists()
    page = portal.client(site_admin).get(url)
    assert page.status_code == 200
    assert "Who may start a team" in page.content.decode()
    model_page = portal.client(site_admin).get(reverse("llm:model_settings")).content.decode()
    assert f'href="{url}"' in model_page


def test_new_teams_start_with_the_sites_default_budgets(portal: Portal,
                                                        site_admin: AbstractUser) -> None:
    refused = portal.client(site_admin).post(reverse("site_team_settings"), {
        "team_creation": "site_admins", "default_monthly_budget": "0",
        "default_run_budget": "-1"})
    assert html.unescape(refused.content.decode()).count("A budget is more than zero") == 2
    assert save_site_settings(portal, site_admin, default_monthly_budget="40",
                              default_run_budget="2.5") == 302

    assert start_team(portal, site_admin, "finance") == 302
    team = Team.objects.get(slug="finance")
    assert (team.monthly_budget, team.run_budget) == (Decimal("40.00"), Decimal("2.50"))
    created = AuditEntry.objects.get(action="team.create", team=team)
    assert created.after["monthly_budget"] == "40.00"
    page = portal.client(site_admin).get(reverse("team_detail", args=["finance"]))
    assert "monthly budget of 40.00 USD" in page.content.decode()
    # Existing teams keep what they had: the defaults are for new teams.
    portal.team.refresh_from_db()
    assert (portal.team.monthly_budget, portal.team.run_budget) == (None, None)


def test_the_demo_set_up_still_puts_its_users_in_the_demo_team_directly() -> None:
    demo = demo_data_ensure(password="autocoder-demo")
    roles = dict(Membership.objects.filter(team=demo.team)
                 .values_list("user__username", "role"))
    assert roles == {"requester": "requester", "reviewer": "reviewer", "admin": "admin"}
    # One hash serves the three (docs/operating.md): each still logs in with the password.
    for membership in Membership.objects.filter(team=demo.team).select_related("user"):
        assert membership.user.check_password("autocoder-demo")
        assert not membership.user.check_password("wrong")
