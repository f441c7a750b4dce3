"""Fixtures of the teams tests, shared by the projects and runs tests: a team with every role,
logged-in clients."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import AbstractUser
from django.test import Client

from teams.models import Membership, Team
from tests.factories import MembershipFactory, TeamFactory, UserFactory


@dataclass
class Portal:
    """A team with an admin, a reviewer, a requester (who asks for the projects), another
    requester, and an outsider who is admin of a different team."""

    team: Team
    admin: AbstractUser
    reviewer: AbstractUser
    requester: AbstractUser
    colleague: AbstractUser
    outsider: AbstractUser

    def client(self, user: AbstractUser | None) -> Client:
        client = Client()
        if user is not None:
            client.force_login(user)
        return client


@pytest.fixture
def portal(db: None) -> Portal:
    team = TeamFactory(slug="acme", name="Acme")
    users = {name: UserFactory(username=name) for name in
             ("alice", "rita", "quinn", "colin", "otto")}
    roles = {"alice": Membership.Role.ADMIN, "rita": Membership.Role.REVIEWER,
             "quinn": Membership.Role.REQUESTER, "colin": Membership.Role.REQUESTER}
    for name, role in roles.items():
        MembershipFactory(team=team, user=users[name], role=role)
    MembershipFactory(team=TeamFactory(slug="elsewhere"), user=users["otto"],
                      role=Membership.Role.ADMIN)
    return Portal(team=team, admin=users["alice"], reviewer=users["rita"],
                  requester=users["quinn"], colleague=users["colin"], outsider=users["otto"])
