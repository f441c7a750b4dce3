"""Warm sandboxes seen from the tools (docs/sandbox.md, "Warm sandboxes"): API calls of a
team's version share one warm sandbox that no other team uses, a team admin turns them off on
the settings page (audited, kept on upgrade), and the kill switch retires them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.sandbox import warm_pool
from teams.models import AuditEntry
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation
from tools.services.activations import activation_decide, activation_request
from tools.services.blocks import version_block
from tools.services.tokens import tool_token_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_pool(settings: Any) -> Iterator[warm_pool.Pool]:
    settings.SANDBOX_BACKEND = "bwrap"
    settings.SANDBOX_WARM = True
    warm_pool.pool().close_all()
    yield warm_pool.pool()
    warm_pool.pool().close_all()


def call(raw: str, team: str = "acme") -> Any:
    url = reverse("tools:api", args=[team, "month-totals", "count"])
    return Client().post(url, json.dumps({}), content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {raw}")


def alive(pool: warm_pool.Pool) -> list[dict[str, Any]]:
    return [s for s in pool.describe() if s["alive"]]


@pytest.fixture
def tokens(active: Activation, world: dict[str, Any]) -> dict[str, str]:
    """A token of acme's and one of team other's, which uses the same public version."""
    asked = activation_request(team=world["other"], version=active.version,
                               user=world["other_admin"])
    activation_decide(activation=asked, user=world["other_admin"], approve=True)
    return {slug: tool_token_create(team=world[slug], plugin=active.plugin,
                                    user=world["admin" if slug == "acme" else "other_admin"],
                                    name="t")[1] for slug in ("acme", "other")}


def test_a_teams_calls_share_a_warm_sandbox_no_other_team_uses(
        tokens: dict[str, str], world: dict[str, Any], fresh_pool: warm_pool.Pool) -> None:
    for _ in range(3):
        assert call(tokens["acme"]).status_code == 200
    assert call(tokens["other"], team="other").status_code == 200
    by_team = {s["team_id"]: s for s in alive(fresh_pool)}
    assert set(by_team) == {world["acme"].pk, world["other"].pk}
    assert by_team[world["acme"].pk]["calls"] == 3 and by_team[world["other"].pk]["calls"] == 1
    assert by_team[world["acme"].pk]["pid"] != by_team[world["other"].pk]["pid"]
    # the storage is the team's, passed per call: nothing of acme's reached other's sandbox
    assert call(tokens["other"], team="other").json()["output"] == {"n": 2}
    assert call(tokens["acme"]).json()["output"] == {"n": 4}


def test_an_admin_turns_warm_sandboxes_off_and_on_again(
        tokens: dict[str, str], active: Activation, world: dict[str, Any],
        fresh_pool: warm_pool.Pool) -> None:
    settings_page = reverse("tools:settings", args=["acme", "month-totals"])
    page = client_for(world["admin"]).get(settings_page).content.decode()
    assert 'name="warm_sandbox" value="on"' in page and " checked>" in page
    assert call(tokens["acme"]).status_code == 200
    assert [s["team_id"] for s in alive(fresh_pool)] == [world["acme"].pk]
    warm_url = reverse("tools:warm", args=["acme", "month-totals"])
    answer = client_for(world["admin"]).post(warm_url, {}, follow=True)
    assert "now start in a new sandbox each time" in answer.content.decode()
    active.refresh_from_db()
    assert active.warm_sandbox is False
    assert alive(fresh_pool) == []  # retired at once
    assert call(tokens["acme"]).status_code == 200 and alive(fresh_pool) == []
    entry = AuditEntry.objects.get(action="tool.warm_changed")
    assert entry.after == {"warm_sandbox": False} and entry.actor_name == "acme-admin"
    client_for(world["admin"]).post(warm_url, {"warm_sandbox": "on"})
    assert call(tokens["acme"]).status_code == 200
    assert [s["team_id"] for s in alive(fresh_pool)] == [world["acme"].pk]


def test_only_a_team_admin_may_turn_them_off(active: Activation, world: dict[str, Any]) -> None:
    warm_url = reverse("tools:warm", args=["acme", "month-totals"])
    assert client_for(world["requester"]).post(warm_url, {}).status_code == 403
    active.refresh_from_db()
    assert active.warm_sandbox is True


def test_an_upgrade_keeps_the_admins_choice(active: Activation, world: dict[str, Any]) -> None:
    client_for(world["admin"]).post(reverse("tools:warm", args=["acme", "month-totals"]), {})
    newer = publish_version(world["acme"], "1.1.0", visibility="public")
    asked = activation_request(team=world["acme"], version=newer, user=world["admin"])
    upgraded = activation_decide(activation=asked, user=world["admin"], approve=True)
    assert upgraded.warm_sandbox is False


def test_the_kill_switch_retires_the_warm_sandboxes_of_every_team(
        tokens: dict[str, str], active: Activation, world: dict[str, Any],
        fresh_pool: warm_pool.Pool) -> None:
    assert call(tokens["acme"]).status_code == 200
    assert call(tokens["other"], team="other").status_code == 200
    pids = [s["pid"] for s in alive(fresh_pool)]
    assert len(pids) == 2
    version_block(version=active.version, user=world["staff"], reason="found malicious")
    assert call(tokens["acme"]).status_code == 403  # refused before any sandbox
    def running() -> list[int]:  # the reaper takes them out of the pool, then stops them
        return [pid for pid in pids if os.path.exists(f"/proc/{pid}")]

    deadline = time.monotonic() + 60  # the reaper asks which keys are wanted every second
    while (alive(fresh_pool) or running()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert alive(fresh_pool) == [] and running() == []
