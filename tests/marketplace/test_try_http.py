""""Try it" reaches other services through the same api.http as a tool call (issue 27): only the
hosts the version's plugin.toml declares, the requests kept and shown with the try's result, and
a team's secret only when the trier's team uses this very version as a tool (filled in by the
host, never in the stored result or on the page).

The service is a loopback HTTP server of this test (tests/tools/test_http_calls.py's stand-in
chat webhook), allowed by TOOLS_INTERNAL_HOSTS.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse

from marketplace.models import PluginVersion, TryRequest
from marketplace.services.trying import plugin_try_perform, plugin_try_request
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.tools.conftest import client_for, publish_version
from tests.tools.test_http_calls import TOKEN, ChatService, hook_toml
from tools.services.activations import activation_decide, activation_request
from tools.services.tool_settings import tool_settings_save

pytestmark = pytest.mark.django_db

BODY = '''"""Tells the team's chat."""


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        base = "http://127.0.0.1:PORT"
        if name == "notify":
            answer = self.api.http.post(base + "/services/T1/B2?channel=team",
                                        json={"text": payload["text"]})
            return {"status": answer.status, "reply": answer.json()}
        if name == "notify_with_key":
            answer = self.api.http.post(base + "/hook", json={"text": payload["text"]},
                                        auth=self.api.secret("api_key"))
            return {"status": answer.status, "reply": answer.json()}
        if name == "elsewhere":
            return {"status": self.api.http.get("http://127.0.0.2:9/").status}
        raise ValueError(name)
'''
COMMANDS = ("notify", "notify_with_key", "elsewhere")
NO_VALUE = ("Try it has no value for the secret 'api_key': activate this plugin as a team tool"
            " and enter it there, then use it from Tools.")


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    """Team acme: its admin, and a requester who tries plugins (acme is their current team)."""
    acme = TeamFactory(slug="acme", name="Acme")
    people = {role: UserFactory(username=f"acme-{role}") for role in ("admin", "requester")}
    for role, user in people.items():
        MembershipFactory(team=acme, user=user, role=role)
    return {"acme": acme, **people}


@pytest.fixture
def chat(settings: Any) -> Iterator[ChatService]:
    settings.TOOLS_INTERNAL_HOSTS = frozenset({"127.0.0.1"})
    service = ChatService()
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service
    service.server.shutdown()
    service.server.server_close()


def publish_chat_try(world: dict[str, Any], port: int, version: str = "1.0.0") -> PluginVersion:
    toml = hook_toml(port).replace('"month-totals"', '"chat-try"').split("[[commands]]", 1)[0]
    toml += "".join(f'[[commands]]\nname = "{name}"\ndescription = "{name}"\n\n'
                    for name in COMMANDS)
    return publish_version(world["acme"], version, name="chat-try",
                           body=BODY.replace("PORT", str(port)), toml=toml)


def tried(world: dict[str, Any], version: PluginVersion, command: str,
          team: bool = True) -> dict[str, Any]:
    """A try as the page asks for it (from team acme), then performed as the worker does."""
    asked = plugin_try_request(version=version, user=world["requester"], command=command,
                               payload={"text": "Volunteer hours: 42"},
                               team_id=world["acme"].pk if team else None)
    done = plugin_try_perform(try_id=asked.pk)
    assert done is not None
    return done.result


def result_page(world: dict[str, Any], asked: TryRequest) -> str:
    page = client_for(world["requester"]).get(
        reverse("marketplace:try_result", args=["chat-try", asked.version.version, asked.pk]),
        HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    return page.content.decode()


def test_try_it_reaches_the_declared_service_and_shows_the_request(
        world: dict[str, Any], chat: ChatService, clean_redis: Any) -> None:
    publish_chat_try(world, chat.port)
    client = client_for(world["requester"])
    asked = client.post(reverse("marketplace:try", args=["chat-try", "1.0.0"]),
                        {"command": "notify", "payload": '{"text": "Volunteer hours: 42"}'},
                        HTTP_HX_REQUEST="true")
    assert asked.status_code == 200
    waiting = TryRequest.objects.get()
    assert waiting.team_id == world["acme"].pk  # the current team, for its settings
    done = plugin_try_perform(try_id=waiting.pk)
    assert done is not None
    assert done.result["ok"], done.result
    assert done.result["output"] == {"status": 200, "reply": {"ok": True}}
    assert chat.received == [{"path": "/services/T1/B2?channel=team",
                              "body": {"text": "Volunteer hours: 42"}, "authorization": None}]
    [record] = done.result["http_requests"]
    assert (record["method"], record["host"], record["status"]) == ("POST", "127.0.0.1", 200)
    assert record["path"].startswith("/services/T1/B2") and "team" not in record["path"]
    page = result_page(world, done)
    assert "1 request to other services" in page
    assert "POST 127.0.0.1/services/T1/B2?channel: 200" in page and "channel=team" not in page


def test_a_host_the_plugin_did_not_declare_is_refused(world: dict[str, Any],
                                                      chat: ChatService, clean_redis: Any) -> None:
    result = tried(world, publish_chat_try(world, chat.port), "elsewhere")
    assert not result["ok"]
    assert "127.0.0.2" in result["error"] and "plugin.toml" in result["error"]
    [record] = result["http_requests"]
    assert record["host"] == "127.0.0.2" and "plugin.toml" in record["refused"]
    assert chat.received == []


def test_a_secret_without_the_teams_tool_is_refused_in_plain_words(
        world: dict[str, Any], chat: ChatService, clean_redis: Any) -> None:
    version = publish_chat_try(world, chat.port)
    for team in (True, False):  # a team that does not use it, or no current team
        result = tried(world, version, "notify_with_key", team=team)
        assert not result["ok"] and NO_VALUE in result["error"], result
    assert chat.received == []
    asked = TryRequest.objects.filter(team__isnull=False).get()
    page = result_page(world, asked)
    assert "activate this plugin as a team tool and enter it there" in page
    assert "1 request to other services" in page and "refused" in page


def test_with_the_teams_tool_the_service_gets_the_secret_which_is_kept_nowhere(
        world: dict[str, Any], chat: ChatService, clean_redis: Any) -> None:
    version = publish_chat_try(world, chat.port)
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    activation = activation_decide(activation=asked, user=world["admin"], approve=True)
    tool_settings_save(team=world["acme"], plugin=activation.plugin, version=version,
                       user=world["admin"], values={"api_key": TOKEN})
    result = tried(world, version, "notify_with_key")
    assert result["ok"], result
    assert chat.received == [{"path": "/hook", "body": {"text": "Volunteer hours: 42"},
                              "authorization": f"Bearer {TOKEN}"}]
    stored = TryRequest.objects.get()
    assert TOKEN not in json.dumps(stored.result)
    page = result_page(world, stored)
    assert "POST 127.0.0.1/hook: 200" in page and TOKEN not in page
    # Another version than the one the team uses does not get the team's secret.
    newer = publish_chat_try(world, chat.port, "1.1.0")
    other = tried(world, newer, "notify_with_key")
    assert not other["ok"] and "your team uses version 1.0.0" in other["error"]
    assert len(chat.received) == 1
