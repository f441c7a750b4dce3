"""A tool that reaches another service (issue 27): the plugin posts to a chat webhook through
`api.http`, the host makes the request with the team's secret token, and the token appears
nowhere but on that request: not in the sandbox, the call log, the result page or what
`manage.py tool_call` prints.

The "chat webhook" is a loopback HTTP server of this test, declared in plugin.toml and allowed
by TOOLS_INTERNAL_HOSTS (tests reach only loopback addresses; a real install would declare
e.g. hooks.slack.com and need no allowlist).
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from tests.tools.conftest import PLUGIN_TOML, client_for, publish_version
from tools.models import Activation, Invocation
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import invocation_call
from tools.services.tool_settings import tool_settings_save

pytestmark = pytest.mark.django_db

TOKEN = "xoxb-team-token-5f3a9c"

HOOK_PY = '''"""Posts a summary to the team's chat."""


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        base = self.api.settings["webhook"]
        if name == "post":
            answer = self.api.http.post(base + "/hook?channel=team", json={"text": payload["text"]},
                                        auth=self.api.secret("api_key"))
            return {"status": answer.status, "reply": answer.json()}
        if name == "echo":
            return {"seen": self.api.http.get(base + "/echo",
                                              headers={"X-Token": "{api_key}"}).text}
        if name == "elsewhere":
            return {"status": self.api.http.get("http://127.0.0.2:9/").status}
        if name == "read_key":
            return {"key": self.api.settings["api_key"]}
        raise ValueError(name)
'''


def hook_toml(port: int) -> str:
    toml = PLUGIN_TOML.replace('network = false\n',
                               f'network = false\nhosts = ["http://127.0.0.1:{port}"]\n')
    toml = toml.replace('name = "greeting"\ndescription = "The word it greets with"',
                        'name = "webhook"\ndescription = "The address of your chat webhook"')
    commands = "".join(f'\n[[commands]]\nname = "{name}"\ndescription = "{name}"\n'
                       for name in ("post", "echo", "elsewhere", "read_key"))
    return toml.split("[[commands]]", 1)[0] + commands.lstrip("\n")


class ChatService:
    """The stand-in chat webhook: it keeps what it was sent."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                service.received.append({"path": self.path, "body": json.loads(body),
                                         "authorization": self.headers.get("Authorization")})
                self._answer(b'{"ok": true}')

            def do_GET(self) -> None:  # noqa: N802
                self._answer(f"you sent {self.headers.get('X-Token')}".encode())

            def _answer(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]


@pytest.fixture
def chat() -> Iterator[ChatService]:
    service = ChatService()
    thread = threading.Thread(target=service.server.serve_forever, daemon=True)
    thread.start()
    yield service
    service.server.shutdown()
    service.server.server_close()


@pytest.fixture
def hook(world: dict[str, Any], chat: ChatService, settings: Any) -> Activation:
    settings.TOOLS_INTERNAL_HOSTS = frozenset({"127.0.0.1"})
    version = publish_version(world["acme"], name="chat-hook", body=HOOK_PY,
                              toml=hook_toml(chat.port).replace('"month-totals"', '"chat-hook"'))
    asked = activation_request(team=world["acme"], version=version, user=world["admin"])
    activation = activation_decide(activation=asked, user=world["admin"], approve=True)
    tool_settings_save(team=world["acme"], plugin=activation.plugin, version=version,
                       user=world["admin"],
                       values={"webhook": f"http://127.0.0.1:{chat.port}", "api_key": TOKEN})
    return activation


def call(activation: Activation, command: str, payload: dict[str, Any] | None = None,
         ) -> Invocation:
    return invocation_call(activation=activation, token_id=None, command=command,
                           payload=payload or {}, user_id=activation.decided_by_id)


def test_the_plugin_posts_with_the_teams_token_which_only_the_service_sees(
        hook: Activation, chat: ChatService, world: dict[str, Any]) -> None:
    done = call(hook, "post", {"text": "Volunteer hours last week: 42"})
    assert done.status == "ok", done.error
    assert done.output == {"status": 200, "reply": {"ok": True}}
    assert chat.received == [{"path": "/hook?channel=team",
                              "body": {"text": "Volunteer hours last week: 42"},
                              "authorization": f"Bearer {TOKEN}"}]
    [record] = done.http_requests
    assert record["method"] == "POST" and record["status"] == 200
    assert record["host"] == "127.0.0.1" and record["path"].startswith("/hook")
    assert "team" not in record["path"]  # query values are not kept
    admin = client_for(world["admin"])
    for name, args in (("tools:result", ["acme", "chat-hook", done.pk]),
                       ("tools:log", ["acme", "chat-hook"])):
        page = admin.get(reverse(name, args=args))
        assert page.status_code == 200
        text = page.content.decode()
        assert "1 request to other services" in text and "POST 127.0.0.1/hook" in text, name
        assert TOKEN not in text and "channel=team" not in text, name
    assert TOKEN not in json.dumps([done.output, done.log_lines, done.error, done.http_requests])


def test_an_answer_that_echoes_the_token_is_blanked_before_the_plugin_sees_it(
        hook: Activation) -> None:
    done = call(hook, "echo")
    assert done.status == "ok", done.error
    assert done.output == {"seen": "you sent [secret]"}


def test_a_host_the_plugin_did_not_declare_is_refused_in_words(hook: Activation,
                                                               chat: ChatService) -> None:
    done = call(hook, "elsewhere")
    assert done.status == "failed"
    assert "127.0.0.2" in done.error and "plugin.toml" in done.error
    assert chat.received == []


def test_a_secret_not_filled_in_yet_is_said_so_and_nothing_is_sent(
        hook: Activation, chat: ChatService, world: dict[str, Any]) -> None:
    tool_settings_save(team=world["acme"], plugin=hook.plugin, version=hook.version,
                       user=world["admin"],
                       values={"webhook": f"http://127.0.0.1:{chat.port}", "api_key": "",
                               "api_key:clear": "1"})  # the admin removed the token
    done = call(hook, "post", {"text": "hours"})
    assert done.status == "failed"
    # the words a call refused for a missing setting has, with the settings page's address
    assert ("api.http: the setting “api_key” (The key of your accounting system) has no value"
            " yet: a team admin enters it on the tool's Settings page,"
            " /t/acme/tools/chat-hook/settings/") in done.error, done.error
    assert chat.received == []


def test_reading_the_secret_in_the_sandbox_says_how_to_send_it(hook: Activation) -> None:
    done = call(hook, "read_key")
    assert done.status == "failed" and done.error_kind == "plugin_error"
    assert "never enters the sandbox" in done.error and "api.secret('api_key')" in done.error
    assert TOKEN not in done.error


def test_tool_call_prints_the_requests_made(hook: Activation, chat: ChatService) -> None:
    out = io.StringIO()
    call_command("tool_call", "acme", "chat-hook", "post", "--payload", '{"text": "hi"}',
                 "--as", hook.decided_by.get_username(), "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["ok"] is True
    assert [r["method"] for r in printed["http_requests"]] == ["POST"]
    assert TOKEN not in out.getvalue()
    assert chat.received[0]["authorization"] == f"Bearer {TOKEN}"


def test_the_review_page_names_the_hosts_and_an_upgrade_shows_a_new_one(
        hook: Activation, chat: ChatService, world: dict[str, Any]) -> None:
    """Reaching another service is a permission the admin approves, in plain words; a new
    version that adds a host says so."""
    admin = client_for(world["admin"])
    page = admin.get(reverse("tools:activation", args=["acme", hook.pk])).content.decode()
    assert "it sends data to and reads from 1 service, only through the portal" in page
    assert f"<strong>http://127.0.0.1:{chat.port}</strong>" in page
    assert "The portal adds the secret <strong>api_key</strong> (The key of your accounting" \
        " system) to the requests to it." in page  # which secret goes to which host
    assert "Network: none" not in page
    assert "new in this version" not in page
    toml = hook_toml(chat.port).replace('"month-totals"', '"chat-hook"').replace(
        f'hosts = ["http://127.0.0.1:{chat.port}"]',
        f'hosts = ["http://127.0.0.1:{chat.port}", "hooks.example.com"]')
    newer = publish_version(world["acme"], "1.1.0", name="chat-hook", body=HOOK_PY, toml=toml)
    asked = activation_request(team=world["acme"], version=newer, user=world["reviewer"])
    page = admin.get(reverse("tools:activation", args=["acme", asked.pk])).content.decode()
    new = '<strong>hooks.example.com</strong> <span class="badge warn">new in this version'
    assert new in page
