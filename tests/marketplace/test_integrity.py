"""Integrity of the marketplace's publish gate and pending page: a vote counts only while its
voter may still decide, and requesters do not learn the names of private plugins."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from marketplace.models import PluginVersion
from marketplace.services.gate import plugin_version_decide
from teams.models import Membership
from tests.marketplace.conftest import client_for, plugin_tree

pytestmark = pytest.mark.django_db


def test_requesters_do_not_see_private_plugins_on_the_pending_page(
        market: dict[str, Any], submit: Any) -> None:
    submit(plugin_tree("secret-payroll"), visibility="private")
    submit(plugin_tree("team-helper"), visibility="team")
    url = reverse("marketplace:pending")
    reviewer = client_for(market["reviewer"]).get(url).content.decode()
    assert "secret-payroll" in reviewer and "team-helper" in reviewer
    requester = client_for(market["requester"]).get(url).content.decode()
    assert "secret-payroll" not in requester and "team-helper" in requester
    outsider = client_for(market["outsider"]).get(url).content.decode()
    assert "secret-payroll" not in outsider and "team-helper" not in outsider


@pytest.mark.parametrize("change", ["removed", "demoted"])
def test_an_approval_stops_counting_when_its_voter_may_no_longer_decide(
        market: dict[str, Any], submit: Any, change: str) -> None:
    acme = market["acme"]
    acme.required_approvals = 2
    acme.save()
    version = submit(plugin_tree())
    plugin_version_decide(version=version, user=market["reviewer"], approve=True)
    leaving = Membership.objects.filter(team=acme, user=market["reviewer"])
    if change == "removed":
        leaving.delete()
    else:
        leaving.update(role=Membership.Role.REQUESTER)
    plugin_version_decide(version=version, user=market["admin"], approve=True)
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.PENDING  # 1 of 2 approvals still counts
