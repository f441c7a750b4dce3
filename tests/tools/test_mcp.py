"""The team's tools over MCP, against a live portal (daphne in a subprocess on the test
database, the real sandbox, Redis) with the official SDK's streamable HTTP client, as an
assistant connects. The token is made by the real `manage.py tool_token` in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import mcp_types as types
import pytest
from django.conf import settings
from django.db import connection
from django.urls import reverse
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.live import LiveServer, child_env, live_asgi_server
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation, Invocation, ToolToken
from tools.services.activations import activation_decide, activation_request
from tools.services.blocks import version_block
from tools.services.tokens import tool_token_revoke

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(clean_redis: object) -> Iterator[LiveServer]:
    with live_asgi_server() as live:
        yield live


def made_token(server: LiveServer, team: str, member: str) -> dict[str, str]:
    """`manage.py tool_token TEAM --as MEMBER --json`, run as a script runs it."""
    done = subprocess.run(
        [sys.executable, "manage.py", "tool_token", team, "--as", member, "--json",
         "--url", server.url, "--name", "Claude on my laptop"],
        cwd=settings.BASE_DIR, env=child_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def client(url: str, token: str, **options: Any) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                              timeout=httpx2.Timeout(60, read=120))
    return Client(streamable_http_client(url, http_client=http), mode=options.pop(
        "mode", "legacy"), **options)


def by_name(tools: list[types.Tool]) -> dict[str, types.Tool]:
    return {tool.name: tool for tool in tools}


def test_an_assistant_lists_the_teams_tools_and_calls_one(
        server: LiveServer, world: dict[str, Any], active: Activation) -> None:
    made = made_token(server, "acme", "acme-admin")
    assert made["mcp_url"] == f"{server.url}mcp/acme/"
    assert made["api_url"] == f"{server.url}api/tools/acme/"

    async def session() -> tuple[Any, ...]:
        async with client(made["mcp_url"], made["token"]) as assistant:
            listed = by_name((await assistant.list_tools()).tools)
            greeted = await assistant.call_tool("month-totals__greet", {"name": "Ada"})
            added = await assistant.call_tool(
                "month-totals__totals", {"rows": [{"month": "Feb", "amount": 3},
                                                  {"month": "Feb", "amount": 4}]})
            failed = await assistant.call_tool("month-totals__fail", {})
            unfit = await assistant.call_tool("month-totals__greet", {"times": 2})
            return assistant.protocol_version, listed, greeted, added, failed, unfit

    version, listed, greeted, added, failed, unfit = anyio.run(session)

    assert version == "2025-11-25"  # the initialize handshake
    assert set(listed) == {f"month-totals__{c}" for c in ("totals", "count", "leak", "fail",
                                                          "greet")}
    greet = listed["month-totals__greet"]
    assert greet.description and greet.description.startswith("Greets a name.")
    assert greet.input_schema["properties"]["name"] == {"type": "string",
                                                        "description": "Who to greet"}
    assert greet.input_schema["required"] == ["name"]
    totals = listed["month-totals__totals"]  # no declared input: the example's shape
    assert totals.input_schema["properties"]["rows"]["type"] == "array"
    assert totals.output_schema is not None
    assert totals.output_schema["properties"]["totals"]["type"] == "array"
    assert greet.annotations is not None and greet.annotations.read_only_hint is False
    assert greet.annotations.open_world_hint is False  # it declares no host to reach

    assert not greeted.is_error and greeted.structured_content == {"result": "Hello, Ada!"}
    assert added.structured_content == {"totals": [{"month": "Feb", "total": 7}]}
    assert json.loads(added.content[0].text) == added.structured_content  # type: ignore[union-attr]
    assert failed.is_error and "there is nothing to add up" in failed.content[0].text  # type: ignore[union-attr]
    assert unfit.is_error and "name: required" in unfit.content[0].text  # type: ignore[union-attr]

    logged = Invocation.objects.filter(team=world["acme"]).exclude(caller="event")
    assert set(logged.values_list("caller", flat=True)) == {Invocation.Caller.MCP}
    # the same token of all the team's tools serves the HTTP API, logged as the API's call
    api = httpx.post(made["api_url"] + "month-totals/greet", json={"name": "Bo"},
                     headers={"Authorization": f"Bearer {made['token']}"}, timeout=120)
    assert api.status_code == 200 and api.json()["output"] == "Hello, Bo!"
    assert logged.filter(caller=Invocation.Caller.TOKEN).count() == 1
    logged = logged.filter(caller=Invocation.Caller.MCP)
    assert logged.filter(command="totals", status="ok").count() == 1
    token = ToolToken.objects.get(name="Claude on my laptop")
    assert token.plugin is None and token.created_by == world["admin"]
    assert set(logged.values_list("token_id", flat=True)) == {token.pk}
    log = client_for(world["admin"]).get(reverse("tools:log", args=["acme", "month-totals"]))
    assert "an assistant (via MCP), token “Claude on my laptop”" in log.content.decode()


def test_a_wrong_revoked_or_other_teams_token_is_refused(
        server: LiveServer, world: dict[str, Any], active: Activation) -> None:
    acme = made_token(server, "acme", "acme-admin")
    other = made_token(server, "other", "other-admin")
    url = acme["mcp_url"]
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}

    bare = httpx.post(url, json=hello, headers=accept)
    assert bare.status_code == 401
    challenge = bare.headers["WWW-Authenticate"]
    metadata_url = f"{server.url}.well-known/oauth-protected-resource/mcp/acme/"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata_url}"' in challenge
    metadata = httpx.get(metadata_url).json()
    assert metadata["resource"] == url and metadata["bearer_methods_supported"] == ["header"]

    wrong = httpx.post(url, json=hello, headers={**accept, "Authorization": "Bearer actl_nope"})
    assert wrong.status_code == 401 and 'error="invalid_token"' in wrong.headers[
        "WWW-Authenticate"]
    elsewhere = httpx.post(url, json=hello,
                           headers={**accept, "Authorization": f"Bearer {other['token']}"})
    assert elsewhere.status_code == 401  # another team's token does not open acme's tools

    async def other_teams_list() -> list[types.Tool]:
        async with client(other["mcp_url"], other["token"]) as assistant:
            return (await assistant.list_tools()).tools

    assert anyio.run(other_teams_list) == []  # other uses no tool; none of acme's shows

    token = ToolToken.objects.get(prefix=acme["token"][:12])
    assert tool_token_revoke(team=world["acme"], plugin=active.plugin, user=world["admin"],
                             token_id=token.pk)
    revoked = httpx.post(url, json=hello,
                         headers={**accept, "Authorization": f"Bearer {acme['token']}"})
    assert revoked.status_code == 401


def test_a_page_of_another_origin_is_refused(server: LiveServer, world: dict[str, Any],
                                             active: Activation) -> None:
    made = made_token(server, "acme", "acme-admin")
    headers = {"Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {made['token']}"}
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}}}
    evil = httpx.post(made["mcp_url"], json=hello,
                      headers={**headers, "Origin": "http://rebound.example"})
    assert evil.status_code == 403
    own = httpx.post(made["mcp_url"], json=hello,
                     headers={**headers, "Origin": server.url.rstrip("/")})
    assert own.status_code == 200, own.text


def test_a_disabled_version_is_refused_in_words(server: LiveServer, world: dict[str, Any],
                                                active: Activation) -> None:
    made = made_token(server, "acme", "acme-admin")
    version_block(version=active.version, user=world["staff"], reason="It leaks data")

    async def session() -> tuple[list[types.Tool], types.CallToolResult]:
        async with client(made["mcp_url"], made["token"]) as assistant:
            listed = (await assistant.list_tools()).tools
            return listed, await assistant.call_tool("month-totals__greet", {"name": "Ada"})

    listed, refused = anyio.run(session)
    assert listed == []
    assert refused.is_error
    assert "disabled this version" in refused.content[0].text  # type: ignore[union-attr]
    assert Invocation.objects.filter(caller="mcp", command="greet").count() == 0


def _upgrade(world: dict[str, Any]) -> None:
    try:
        version = publish_version(world["acme"], "1.1.0", visibility="public")
        asked = activation_request(team=world["acme"], version=version, user=world["admin"])
        activation_decide(activation=asked, user=world["admin"], approve=True)
    finally:
        connection.close()  # this thread's own connection


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_activating_a_version_tells_connected_assistants(
        server: LiveServer, world: dict[str, Any], active: Activation, mode: str) -> None:
    made = made_token(server, "acme", "acme-admin")
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    async def session() -> str:
        async with client(made["mcp_url"], made["token"], mode=mode,
                          message_handler=on_message) as assistant:
            assert assistant.protocol_version == ("2025-11-25" if mode == "legacy" else mode)
            before = (await assistant.list_tools()).tools
            assert "1.0.0" in (before[0].description or "")
            if mode == "legacy":
                await anyio.to_thread.run_sync(_upgrade, world)
                with anyio.fail_after(60):
                    await heard.wait()
            else:
                async with assistant.listen(tools_list_changed=True) as events:
                    await anyio.to_thread.run_sync(_upgrade, world)
                    with anyio.fail_after(60):
                        async for _event in events:
                            break
            after = (await assistant.list_tools()).tools
            return after[0].description or ""

    assert "version 1.1.0" in anyio.run(session)


def _rpc_answer(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC answer of a Streamable HTTP response (JSON, or the SSE event holding it)."""
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(next(item for item in data if '"result"' in item or '"error"' in item)))


def test_a_sessions_request_reaching_another_web_process_is_answered(
        server: LiveServer, world: dict[str, Any], active: Activation) -> None:
    made = made_token(server, "acme", "acme-admin")
    headers = {"Accept": "application/json, text/event-stream",
               "Authorization": f"Bearer {made['token']}"}
    opened = httpx.post(made["mcp_url"], headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}}, timeout=60)
    assert opened.status_code == 200
    session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"],
               "Mcp-Protocol-Version": "2025-11-25"}
    with live_asgi_server() as second:  # another web process, as `up` runs several
        listed = httpx.post(f"{second.url}mcp/acme/", headers=session, timeout=60, json={
            "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        assert listed.status_code == 200, listed.text
        names = {tool["name"] for tool in _rpc_answer(listed)["result"]["tools"]}
        assert "month-totals__greet" in names
        stream = httpx.get(f"{second.url}mcp/acme/", headers=session, timeout=60)
        assert stream.status_code == 404  # the SDK's client opens its GET stream again


def test_tool_token_is_for_team_admins_only(world: dict[str, Any]) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "manage.py", "tool_token", *args],
                              cwd=settings.BASE_DIR, env=child_env(), capture_output=True,
                              text=True, timeout=120)

    refused = run("acme", "--as", "acme-requester")
    assert refused.returncode != 0 and "no token made: Only admins of Acme" in refused.stderr
    assert run("nowhere", "--as", "acme-admin").stderr.strip().endswith(
        "no team with slug 'nowhere'")
    made = run("acme", "--as", "acme-admin")
    assert made.returncode == 0 and "MCP address (for an assistant): " \
        "http://127.0.0.1:8000/mcp/acme/" in made.stdout
    assert ToolToken.objects.filter(team=world["acme"], plugin__isnull=True).count() == 1


def _disable(world: dict[str, Any], active: Activation) -> None:
    try:
        version_block(version=active.version, user=world["staff"], reason="It leaks data")
    finally:
        connection.close()


def test_the_kill_switch_tells_connected_assistants(
        server: LiveServer, world: dict[str, Any], active: Activation) -> None:
    made = made_token(server, "acme", "acme-admin")
    heard = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.set()

    async def session() -> list[types.Tool]:
        async with client(made["mcp_url"], made["token"], message_handler=on_message) as assistant:
            assert (await assistant.list_tools()).tools
            await anyio.to_thread.run_sync(_disable, world, active)
            with anyio.fail_after(60):
                await heard.wait()
            return (await assistant.list_tools()).tools

    assert anyio.run(session) == []
