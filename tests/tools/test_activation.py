"""Activation is an approval gate: who decides (the approval rules), what the decider sees,
upgrades with a diff, roll-back, settings and secrets."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from runs.approval_rules import AlreadyDecided, MayNotDecide
from teams.models import AuditEntry, Notification
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation, ToolSetting
from tools.services.activations import (
    activation_decide,
    activation_request,
    activation_rollback,
)
from tools.services.tool_settings import settings_for_call, tool_settings_save

pytestmark = pytest.mark.django_db


def test_a_requester_asks_the_admin_is_told_and_decides(world: dict[str, Any]) -> None:
    version = publish_version(world["acme"])
    asked = activation_request(team=world["acme"], version=version, user=world["requester"])
    assert asked.status == Activation.Status.PENDING
    assert Notification.objects.filter(user=world["admin"], url__contains=str(asked.pk)).exists()
    for person in ("requester", "reviewer"):
        with pytest.raises(MayNotDecide, match="Only admins of Acme"):
            activation_decide(activation=asked, user=world[person], approve=True)
    decided = activation_decide(activation=asked, user=world["admin"], approve=True)
    assert decided.status == Activation.Status.ACTIVE
    assert Notification.objects.filter(user=world["requester"], kind="decided").exists()
    with pytest.raises(AlreadyDecided, match="acme-admin"):
        activation_decide(activation=asked, user=world["admin"], approve=False)
    actions = set(AuditEntry.objects.filter(team=world["acme"]).values_list("action", flat=True))
    assert {"tool.activation_requested", "tool.activated"} <= actions


def test_a_refusal_is_recorded_and_nothing_is_in_use(world: dict[str, Any]) -> None:
    asked = activation_request(team=world["acme"], version=publish_version(world["acme"]),
                               user=world["admin"])
    activation_decide(activation=asked, user=world["admin"], approve=False, comment="not now")
    assert not Activation.objects.filter(status="active").exists()
    entry = AuditEntry.objects.get(action="tool.activation_refused")
    assert entry.after["comment"] == "not now"


def test_the_decider_sees_permissions_reports_settings_and_limits(world: dict[str, Any]) -> None:
    version = publish_version(world["acme"])
    page = client_for(world["admin"]).get(reverse("tools:activate", args=[
        "acme", "month-totals", version.version])).content.decode()
    for words in ("What it may do", "Other services: none. It cannot send your data anywhere",
                  "1 passed, 0 failed", "pass",
                  "api_key", "secret", "The key of your accounting system", "15 seconds",
                  "Approve and activate", "Refuse"):
        assert words in page, words
    asking = client_for(world["requester"]).get(reverse("tools:activate", args=[
        "acme", "month-totals", version.version])).content.decode()
    assert "Ask the admins to activate it" in asking and "Approve and activate" not in asking


def test_another_teams_public_plugin_can_be_activated_a_team_only_one_cannot(
        world: dict[str, Any]) -> None:
    public = publish_version(world["acme"], visibility="public")
    page = client_for(world["other_admin"]).post(
        reverse("tools:activate", args=["other", "month-totals", public.version]),
        {"decision": "approve"})
    assert page.status_code == 302
    assert Activation.objects.get(team=world["other"]).status == "active"
    hidden = publish_version(world["acme"], name="secret-tool")
    missing = client_for(world["other_admin"]).get(
        reverse("tools:activate", args=["other", "secret-tool", hidden.version]))
    assert missing.status_code == 404


def test_outsiders_get_404_on_every_tool_page(active: Activation, world: dict[str, Any]) -> None:
    outsider = client_for(world["other_admin"])
    for name, args in (("tools:list", ["acme"]), ("tools:detail", ["acme", "month-totals"]),
                       ("tools:log", ["acme", "month-totals"]),
                       ("tools:activation", ["acme", active.pk])):
        assert outsider.get(reverse(name, args=args)).status_code == 404, name


def test_an_upgrade_shows_the_code_and_permission_diff_then_rolls_back(
        active: Activation, world: dict[str, Any]) -> None:
    newer = publish_version(world["acme"], "1.1.0",
                            body=active.version.files["month_totals/plugin.py"]
                            + "\n# a new line in 1.1.0\n")
    page = client_for(world["admin"]).get(reverse("tools:activate", args=[
        "acme", "month-totals", "1.1.0"])).content.decode()
    assert "Upgrade month-totals 1.1.0" in page and "What changes from version 1.0.0" in page
    assert "a new line in 1.1.0" in page
    upgrade = activation_request(team=world["acme"], version=newer, user=world["admin"])
    activation_decide(activation=upgrade, user=world["admin"], approve=True)
    assert Activation.objects.get(status="active").version == newer
    back = activation_rollback(team=world["acme"], plugin=newer.plugin, user=world["admin"])
    assert back.version == active.version and back.rollback
    assert Activation.objects.filter(status="active").count() == 1
    assert AuditEntry.objects.filter(action="tool.rolled_back").exists()
    page = client_for(world["requester"]).get(reverse("tools:detail", args=[
        "acme", "month-totals"])).content.decode()
    assert "1.1.0: no longer in use" in page and "1.0.0: active (gone back to)" in page


def test_secrets_are_sealed_never_shown_and_kept_when_left_empty(
        active: Activation, world: dict[str, Any]) -> None:
    tool_settings_save(team=world["acme"], plugin=active.plugin, version=active.version,
                       user=world["admin"], values={"greeting": "Hi",
                                                    "api_key": "sk-very-secret-1234"})
    row = ToolSetting.objects.get(name="api_key")
    assert row.secret and "sk-very-secret-1234" not in row.value
    url = reverse("tools:settings", args=["acme", "month-totals"])
    page = client_for(world["admin"]).get(url).content.decode()
    assert "sk-very-secret-1234" not in page and "secret · set" in page and 'value="Hi"' in page
    client_for(world["admin"]).post(url, {"greeting": "Hey", "api_key": ""})
    values, secret_names = settings_for_call(team=world["acme"], plugin=active.plugin,
                                             version=active.version)
    assert values == {"greeting": "Hey", "api_key": "sk-very-secret-1234"}
    assert secret_names == ["api_key"]
    audit = AuditEntry.objects.filter(action="tool.settings_changed")
    assert all("sk-very-secret" not in str(e.after) for e in audit)
    assert client_for(world["requester"]).get(url).status_code == 403
