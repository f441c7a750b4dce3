"""What a publication tells the teams (issue 29): the marketplace announces a version that went
live (marketplace/signals.py `version_published`, once committed) and the tools app answers
(tools/receivers.py): a change run's version ships the change requests it came from, their
askers told; and the admins of every team using an older version hear that an upgrade waits,
with a link to the upgrade. Nothing changes for a team until one of its admins upgrades."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.urls import reverse

from marketplace.models import Plugin, PluginVersion
from marketplace.services.gate import plugin_version_decide
from runs.models import Run
from teams.models import Notification
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.tools.conftest import _manifest, client_for, plugin_files
from tools.models import Activation, ChangeRequest
from tools.services.activations import activation_decide, activation_request
from tools.services.changes import change_request_create, change_request_start

pytestmark = pytest.mark.django_db(transaction=True)


def published_through_the_gate(world: dict[str, Any], version: str, *,
                               run: Run | None = None) -> PluginVersion:
    """A new version of month-totals waits at the gate (as an upload leaves it); acme's
    reviewer publishes it."""
    files = plugin_files(version)
    waiting = PluginVersion.objects.create(
        plugin=Plugin.objects.get(normalized_name="month-totals"), version=version,
        status=PluginVersion.Status.PENDING, source="upload", visibility="public",
        summary="Adds up amounts per month.", manifest=_manifest(version), files=files,
        source_sha256=hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest(),
        test_report={"passed": 1, "failed": 0, "errors": 0}, safety_report={"findings": []},
        safety_verdict="pass", run=run, submitted_by=world["requester"])
    decided = plugin_version_decide(version=waiting, user=world["reviewer"], approve=True)
    assert decided.status == PluginVersion.Status.PUBLISHED
    return decided


def upgrade_notices(user: Any) -> list[Notification]:
    return list(Notification.objects.filter(user=user, message__startswith="Upgrade waiting"))


def test_teams_using_an_older_version_are_told_an_upgrade_waits_and_nothing_changes(
        active: Activation, world: dict[str, Any]) -> None:
    # Team other uses 1.0.0 of acme's public plugin too; team idle does not use it.
    other = activation_request(team=world["other"], version=active.version,
                               user=world["other_admin"])
    activation_decide(activation=other, user=world["other_admin"], approve=True)
    idle_admin = UserFactory(username="idle-admin")
    MembershipFactory(team=TeamFactory(slug="idle"), user=idle_admin, role="admin")

    newer = published_through_the_gate(world, "1.0.1")

    [acme_notice] = upgrade_notices(world["admin"])
    assert acme_notice.url == reverse("tools:activate", args=["acme", "month-totals", "1.0.1"])
    assert "month-totals 1.0.1 is out (your team uses 1.0.0)" in acme_notice.message
    [other_notice] = upgrade_notices(world["other_admin"])
    assert other_notice.url == reverse("tools:activate",
                                       args=["other", "month-totals", "1.0.1"])
    assert upgrade_notices(idle_admin) == []
    assert upgrade_notices(world["requester"]) == []  # who may not upgrade is not told
    # Nothing changed for either team: both still run 1.0.0.
    assert set(Activation.objects.filter(status="active").values_list(
        "team__slug", "version__version")) == {("acme", "1.0.0"), ("other", "1.0.0")}

    # The link is the upgrade: the activation page with what changes; approving it upgrades.
    admin = client_for(world["admin"])
    page = admin.get(acme_notice.url).content.decode()
    assert "Upgrade month-totals 1.0.1" in page and "What changes from version 1.0.0" in page
    done = admin.post(acme_notice.url, {"decision": "approve", "comment": ""})
    assert done.status_code == 302
    assert Activation.objects.get(team=world["acme"], status="active").version == newer
    assert Activation.objects.get(team=world["other"], status="active").version.version == \
        "1.0.0"
    acme_notice.refresh_from_db()
    assert acme_notice.read_at is not None  # upgrading settles the notice
    other_notice.refresh_from_db()
    assert other_notice.read_at is None

    # A team already on the newest version is not told again when an older one is published.
    published_through_the_gate(world, "0.9.0")
    assert len(upgrade_notices(world["admin"])) == 1


def test_a_change_runs_version_ships_its_requests_and_tells_the_asker(
        active: Activation, world: dict[str, Any]) -> None:
    asked = change_request_create(
        user=world["requester"], plugin=active.plugin, from_team=world["acme"],
        version=active.version, description="March should add up to 412.50.",
        cases=[{"command": "totals", "input": {"rows": [{"month": "Mar", "amount": 412.5}]},
                "got": {"totals": []}, "failed": False,
                "expected": {"totals": [{"month": "Mar", "total": 412.5}]}}])
    started = change_request_start(request=asked, user=world["reviewer"])
    assert started.status == ChangeRequest.Status.STARTED and started.project is not None
    run = started.project.runs.get()
    # An unrelated request of the same plugin stays as it was.
    other = change_request_create(user=world["requester"], plugin=active.plugin,
                                  from_team=world["acme"], version=active.version,
                                  description="Add a column with the VAT.")

    published_through_the_gate(world, "1.0.1", run=run)

    started.refresh_from_db()
    assert started.status == ChangeRequest.Status.SHIPPED and started.shipped_at is not None
    assert ChangeRequest.objects.get(pk=other.pk).status == ChangeRequest.Status.OPEN
    told = Notification.objects.get(user=world["requester"], message__contains="is out")
    assert told.url == reverse("tools:change", args=[asked.pk]) + "#shipped"
    page = client_for(world["requester"]).get(told.url).content.decode()
    assert "The change is out" in page


def test_a_version_not_from_a_change_run_ships_nothing(
        active: Activation, world: dict[str, Any]) -> None:
    asked = change_request_create(
        user=world["requester"], plugin=active.plugin, from_team=world["acme"],
        version=active.version, description="March is missing.",
        cases=[{"command": "totals", "input": {"rows": []}, "expected": {"totals": []}}])
    change_request_start(request=asked, user=world["reviewer"])
    published_through_the_gate(world, "1.0.1")
    assert ChangeRequest.objects.get(pk=asked.pk).status == ChangeRequest.Status.STARTED
