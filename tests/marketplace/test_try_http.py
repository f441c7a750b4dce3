""""Try it" on a plugin that talks to other services (issues 27 and 45): a **rehearsal** by
default, which keeps every rule of api.http (the hosts plugin.toml declares) but sends nothing:
the requests are shown with what they would send and answered from the sample answers of the
version's examples. **Sending for real** uses the trier's team's settings, only where that team
uses this very version as a tool, and only once confirmed, which the team's audit log records.

The service is a loopback HTTP server of this test that counts every request it gets (of any
method), allowed by TOOLS_INTERNAL_HOSTS: a rehearsal must leave its count at 0.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.urls import reverse

from marketplace.models import PluginVersion, TryRequest
from marketplace.services.trying import (
    SEND_NO_LONGER,
    plugin_try_perform,
    plugin_try_request,
)
from marketplace.validation import PackageError
from teams.models import AuditEntry
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.tools.conftest import client_for, publish_version
from tests.tools.test_http_calls import TOKEN, hook_toml
from tools.models import Activation
from tools.services.activations import activation_decide, activation_request, activation_retire
from tools.services.tool_settings import tool_settings_save

pytestmark = pytest.mark.django_db

BODY = '''"""Tells the team's chat."""


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        base = "http://127.0.0.1:PORT"
        if name == "notify":
            answer = self.api.http.post(base + "/hook?channel=team", json={"text": payload["text"]},
                                        auth=self.api.secret("api_key"))
            return {"status": answer.status, "reply": answer.json()}
        if name == "unanswered":
            return {"status": self.api.http.get(base + "/nobody-answers-this").status}
        if name == "elsewhere":
            return {"status": self.api.http.get("http://127.0.0.2:9/").status}
        raise ValueError(name)
'''
COMMANDS = ("notify", "unanswered", "elsewhere")
TEXT = {"text": "Volunteer hours: 42"}


class CountingService:
    """The stand-in chat: it counts every request and keeps what it was sent."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                service.received.append({"method": self.command, "path": self.path,
                                         "body": body.decode(),
                                         "authorization": self.headers.get("Authorization")})
                answer = b'{"ok": true, "real": true}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _any  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@pytest.fixture
def world(db: None) -> dict[str, Any]:
    """Team acme: its admin, and a requester who tries plugins (acme is their current team)."""
    acme = TeamFactory(slug="acme", name="Acme")
    people = {role: UserFactory(username=f"acme-{role}") for role in ("admin", "requester")}
    for role, user in people.items():
        MembershipFactory(team=acme, user=user, role=role)
    return {"acme": acme, **people}


@pytest.fixture
def chat(settings: Any) -> Iterator[CountingService]:
    settings.TOOLS_INTERNAL_HOSTS = frozenset({"127.0.0.1"})
    service = CountingService()
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service
    service.server.shutdown()
    service.server.server_close()


def publish_chat_try(world: dict[str, Any], port: int, version: str = "1.0.0") -> PluginVersion:
    """The chat plugin, its "notify" example answered as the spec's sample answers are."""
    toml = hook_toml(port).replace('"month-totals"', '"chat-try"').split("[[commands]]", 1)[0]
    toml += "".join(f'[[commands]]\nname = "{name}"\ndescription = "{name}"\n\n'
                    for name in COMMANDS)
    published = publish_version(world["acme"], version, name="chat-try",
                                body=BODY.replace("PORT", str(port)), toml=toml)
    sample = {"method": "POST", "url": f"http://127.0.0.1:{port}/hook", "status": 200,
              "json": {"ok": True, "sample": True}}
    commands = [{"name": name, "description": name,
                 "examples": [{"input": TEXT, "output": {"status": 200},
                               "http": [sample]}] if name == "notify" else []}
                for name in COMMANDS]
    PluginVersion.objects.filter(pk=published.pk).update(commands=commands)
    published.refresh_from_db()
    return published


def use_as_tool(world: dict[str, Any], version: PluginVersion) -> Activation:
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    activation = activation_decide(activation=asked, user=world["admin"], approve=True)
    tool_settings_save(team=world["acme"], plugin=activation.plugin, version=version,
                       user=world["admin"], values={"api_key": TOKEN,
                                                    "webhook": "http://127.0.0.1"})
    return activation


def tried(world: dict[str, Any], version: PluginVersion, command: str, **how: Any) -> TryRequest:
    """A try as the page asks for it (from team acme), then performed as the worker does."""
    asked = plugin_try_request(version=version, user=world["requester"], command=command,
                               payload=TEXT, team_id=world["acme"].pk, **how)
    done = plugin_try_perform(try_id=asked.pk)
    assert done is not None
    return done


def result_page(world: dict[str, Any], asked: TryRequest) -> str:
    page = client_for(world["requester"]).get(
        reverse("marketplace:try_result", args=["chat-try", asked.version.version, asked.pk]),
        HTTP_HX_REQUEST="true")
    assert page.status_code == 200
    return unescape(page.content.decode())


def test_a_try_rehearses_by_default_shows_the_request_and_sends_nothing(
        world: dict[str, Any], chat: CountingService, clean_redis: Any) -> None:
    version = publish_chat_try(world, chat.port)
    use_as_tool(world, version)  # even with the team's real token saved, nothing goes out
    client = client_for(world["requester"])
    form = unescape(client.get(reverse("marketplace:version", args=["chat-try", "1.0.0"]))
                    .content.decode())
    assert f"Requests to http://127.0.0.1:{chat.port}" in form
    assert 'name="mode" value="rehearse" checked' in form
    asked = client.post(reverse("marketplace:try", args=["chat-try", "1.0.0"]),
                        {"command": "notify", "payload": json.dumps(TEXT)},
                        HTTP_HX_REQUEST="true")
    assert asked.status_code == 200
    waiting = TryRequest.objects.get()
    assert waiting.send is False
    done = plugin_try_perform(try_id=waiting.pk)
    assert done is not None and done.result["ok"], done.result
    assert done.result["output"] == {"status": 200, "reply": {"ok": True, "sample": True}}
    assert chat.received == []  # not one request reached the service
    [record] = done.result["http_requests"]
    assert record["rehearsal"] is True and record["status"] == 200
    assert (record["method"], record["host"]) == ("POST", "127.0.0.1")
    assert record["sent"]["headers"]["Authorization"] == "Bearer [secret api_key]"
    assert json.loads(record["sent"]["body"]) == TEXT
    assert TOKEN not in json.dumps(done.result)
    assert not AuditEntry.objects.filter(action="marketplace.try_sent").exists()
    page = result_page(world, done)
    assert "rehearsal" in page and "Nothing was sent" in page
    assert "rehearsed, not sent" in page and "What it would send" in page
    assert "Authorization: Bearer [secret api_key]" in page and TOKEN not in page


def test_a_request_without_a_sample_answer_is_said_so_and_not_sent(
        world: dict[str, Any], chat: CountingService, clean_redis: Any) -> None:
    done = tried(world, publish_chat_try(world, chat.port), "unanswered")
    assert not done.result["ok"]
    assert "rehearsal: no sample answer for GET 127.0.0.1/nobody-answers-this" in \
        done.result["error"]
    [record] = done.result["http_requests"]
    assert record["rehearsal"] and "no sample answer" in record["refused"]
    assert "not sent" in result_page(world, done)
    assert chat.received == []


def test_a_host_the_plugin_did_not_declare_is_refused_in_a_rehearsal_too(
        world: dict[str, Any], chat: CountingService, clean_redis: Any) -> None:
    done = tried(world, publish_chat_try(world, chat.port), "elsewhere")
    assert not done.result["ok"]
    assert "127.0.0.2" in done.result["error"] and "plugin.toml" in done.result["error"]
    assert chat.received == []


def test_sending_for_real_needs_the_teams_activation_of_this_version(
        world: dict[str, Any], chat: CountingService, clean_redis: Any) -> None:
    version = publish_chat_try(world, chat.port)
    with pytest.raises(PackageError) as refused:
        plugin_try_request(version=version, user=world["requester"], command="notify",
                           payload=TEXT, team_id=world["acme"].pk, send=True, confirmed=True)
    assert "your current team does not use chat-try: rehearse instead" in refused.value.errors[0]
    page = unescape(client_for(world["requester"]).get(
        reverse("marketplace:version", args=["chat-try", "1.0.0"])).content.decode())
    assert 'value="send"' not in page and "your current team does not use chat-try" in page
    # the page's own post is refused the same way, and nothing is queued
    posted = client_for(world["requester"]).post(
        reverse("marketplace:try", args=["chat-try", "1.0.0"]),
        {"command": "notify", "payload": json.dumps(TEXT), "mode": "send", "confirm": "1"},
        HTTP_HX_REQUEST="true")
    assert "your current team does not use chat-try" in unescape(posted.content.decode())
    # another version than the one the team uses: its settings stay with that version
    use_as_tool(world, version)
    newer = publish_chat_try(world, chat.port, "1.1.0")
    with pytest.raises(PackageError, match="the version your team uses as a tool"):
        plugin_try_request(version=newer, user=world["requester"], command="notify",
                           payload=TEXT, team_id=world["acme"].pk, send=True, confirmed=True)
    assert not TryRequest.objects.exists() and chat.received == []


def test_sending_for_real_needs_the_confirmation_and_is_logged(
        world: dict[str, Any], chat: CountingService, clean_redis: Any) -> None:
    version = publish_chat_try(world, chat.port)
    use_as_tool(world, version)
    with pytest.raises(PackageError, match="tick the box to confirm it"):
        plugin_try_request(version=version, user=world["requester"], command="notify",
                           payload=TEXT, team_id=world["acme"].pk, send=True)
    assert not TryRequest.objects.exists()
    client = client_for(world["requester"])
    form = unescape(client.get(reverse("marketplace:version", args=["chat-try", "1.0.0"]))
                    .content.decode())
    assert "Send for real, with Acme's settings" in form and 'name="confirm"' in form
    client.post(reverse("marketplace:try", args=["chat-try", "1.0.0"]),
                {"command": "notify", "payload": json.dumps(TEXT), "mode": "send",
                 "confirm": "1"}, HTTP_HX_REQUEST="true")
    asked = TryRequest.objects.get()
    assert asked.send is True
    entry = AuditEntry.objects.get(action="marketplace.try_sent")
    assert entry.team == world["acme"] and entry.actor == world["requester"]
    assert entry.after["command"] == "notify" and entry.after["try"] == asked.pk
    assert entry.after["hosts"] == [f"http://127.0.0.1:{chat.port}"]
    done = plugin_try_perform(try_id=asked.pk)
    assert done is not None and done.result["ok"], done.result
    assert done.result["output"] == {"status": 200, "reply": {"ok": True, "real": True}}
    assert [(r["method"], r["path"], r["authorization"]) for r in chat.received] == [
        ("POST", "/hook?channel=team", f"Bearer {TOKEN}")]
    assert TOKEN not in json.dumps(done.result)
    [record] = done.result["http_requests"]
    assert "rehearsal" not in record and "sent" not in record
    page = result_page(world, done)
    assert "sent for real" in page and TOKEN not in page


def test_a_send_asked_before_the_team_stopped_using_it_sends_nothing(
        world: dict[str, Any], chat: CountingService, clean_redis: Any) -> None:
    version = publish_chat_try(world, chat.port)
    activation = use_as_tool(world, version)
    asked = plugin_try_request(version=version, user=world["requester"], command="notify",
                               payload=TEXT, team_id=world["acme"].pk, send=True, confirmed=True)
    activation_retire(team=world["acme"], plugin=activation.plugin, user=world["admin"])
    done = plugin_try_perform(try_id=asked.pk)
    assert done is not None and done.result["error"] == SEND_NO_LONGER
    assert chat.received == []
