"""Fixtures of the tools tests: two teams, and published versions of a real plugin (created
as the publish gate leaves them, without re-running the upload checks every test)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from marketplace.models import Plugin, PluginVersion
from teams.models import Team
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tools.models import Activation

PLUGIN_TOML = '''[plugin]
name = "month-totals"
version = "{version}"
summary = "Adds up amounts per month."
entry = "month_totals.plugin:Plugin"

[permissions]
network = false
filesystem = "none"

[[settings]]
name = "greeting"
description = "The word it greets with"
required = false

[[settings]]
name = "api_key"
description = "The key of your accounting system"
secret = true
required = false

[[commands]]
name = "totals"
description = "Adds up the amounts of each month."
[[commands.examples]]
input = {{rows = [{{month = "Jan", amount = 2}}]}}
output = {{totals = [{{month = "Jan", total = 2}}]}}

[[commands]]
name = "count"
description = "Counts its calls in its storage."

[[commands]]
name = "leak"
description = "Tries to show its secret."

[[commands]]
name = "fail"
description = "Always fails."

[[commands]]
name = "greet"
description = "Greets a name."
[commands.input]
name = {{ type = "text", description = "Who to greet" }}
times = {{ type = "number", description = "How often", required = false }}
'''

PLUGIN_PY = '''"""A plugin for the tools tests."""


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_event(self, event, data):
        self.api.storage["events"] = self.api.storage.get("events", []) + [[event, data]]

    def on_command(self, name, payload):
        if name == "totals":
            sums = {}
            for row in payload["rows"]:
                sums[row["month"]] = sums.get(row["month"], 0) + row["amount"]
            return {"totals": [{"month": m, "total": t} for m, t in sums.items()]}
        if name == "count":
            n = self.api.storage.get("n", 0) + 1
            self.api.storage["n"] = n
            self.api.log(f"call number {n}")
            return {"n": n}
        if name == "leak":
            key = self.api.settings.get("api_key", "")
            self.api.log("the key is " + key)
            return {"key": key, "greeting": self.api.settings.get("greeting", "")}
        if name == "fail":
            raise ValueError("there is nothing to add up")
        if name == "greet":
            word = self.api.settings.get("greeting") or "Hello"
            return " ".join([f"{word}, {payload['name']}!"] * int(payload.get("times", 1)))
        raise ValueError(f"unknown command: {name!r}")
'''


def plugin_files(version: str = "1.0.0", body: str = PLUGIN_PY,
                 toml: str = PLUGIN_TOML) -> dict[str, str]:
    return {"plugin.toml": toml.format(version=version),
            "month_totals/__init__.py": "", "month_totals/plugin.py": body,
            "tests/test_plugin.py": "def test_nothing():\n    pass\n", "README.md": "# x\n"}


def _manifest(version: str, toml: str = PLUGIN_TOML) -> dict[str, Any]:
    import tomllib

    raw = tomllib.loads(toml.format(version=version))
    return {"name": "month-totals", "version": version, "summary": raw["plugin"]["summary"],
            "entry": raw["plugin"]["entry"], "package": "month_totals",
            "permissions": raw["permissions"],
            "commands": [{"name": c["name"], "description": c["description"]}
                         for c in raw["commands"]]}


def publish_version(team: Team, version: str = "1.0.0", *, visibility: str = "team",
                    body: str = PLUGIN_PY, name: str = "month-totals",
                    toml: str = PLUGIN_TOML) -> PluginVersion:
    """A published version as the gate leaves it (the plugin row too, on first use)."""
    plugin, _ = Plugin.objects.get_or_create(
        normalized_name=name, defaults={"name": name, "team": team, "visibility": visibility,
                                        "summary": "Adds up amounts per month.",
                                        "published_at": timezone.now()})
    files = plugin_files(version, body, toml)
    manifest = _manifest(version, toml)
    raw_commands = [{"name": c["name"], "description": c["description"],
                     **({"examples": [{"input": {"rows": [{"month": "Jan", "amount": 2}]},
                                       "output": {"totals": [{"month": "Jan", "total": 2}]}}]}
                        if c["name"] == "totals" else {})} for c in manifest["commands"]]
    created = PluginVersion.objects.create(
        plugin=plugin, version=version, status=PluginVersion.Status.PUBLISHED, source="upload",
        visibility=visibility, summary=manifest["summary"], manifest=manifest,
        commands=raw_commands, files=files,
        source_sha256=hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest(),
        test_report={"passed": 1, "failed": 0, "errors": 0}, safety_report={"findings": []},
        safety_verdict="pass", published_at=timezone.now())
    Plugin.objects.filter(pk=plugin.pk).update(latest_version=created)
    return created


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    """Team acme (admin, reviewer, requester) and team other (admin), plus a site admin."""
    acme, other = TeamFactory(slug="acme", name="Acme"), TeamFactory(slug="other", name="Other")
    people = {role: UserFactory(username=f"acme-{role}") for role in
              ("admin", "reviewer", "requester")}
    for role, user in people.items():
        MembershipFactory(team=acme, user=user, role=role)
    other_admin = UserFactory(username="other-admin")
    MembershipFactory(team=other, user=other_admin, role="admin")
    staff = UserFactory(username="staff", is_staff=True)
    return {"acme": acme, "other": other, **people, "other_admin": other_admin,
            "staff": staff}


@pytest.fixture
def active(world: dict[str, Any]) -> Activation:
    """month-totals 1.0.0 (acme's, public) activated by acme's admin."""
    from tools.services.activations import activation_decide, activation_request

    version = publish_version(world["acme"], visibility="public")
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    return activation_decide(activation=asked, user=world["admin"], approve=True)


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client
