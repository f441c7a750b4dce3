"""The MCP server of the team's tools, on the official SDK's low-level `Server` (one for the
whole site: each request carries the token's grant, tools/mcp/asgi.py, and the handlers list
and call only what that grant reaches). docs/tools.md, "From an assistant (MCP)".

Sessions: a client of the handshake era (`initialize`, protocol 2025-11-25 and before) gets a
session (Mcp-Session-Id) in the web process that answered it; it hears
`notifications/tools/list_changed` on its GET stream. A client of the 2026-07-28 protocol sends
self-contained requests any web process answers, and hears the change on its
`subscriptions/listen` stream. Changes reach every process through Redis
(tools/services/tool_changes.py).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import mcp_types as types
import redis.asyncio as aioredis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tools.mcp.catalogue import Grant, ToolEntry, tool_find, tools_for
from tools.models import Invocation
from tools.services.invocations import InvocationRefused, invocation_call
from tools.services.tool_changes import CHANNEL

logger = logging.getLogger(__name__)

GRANT_KEY = "autocoder.mcp.grant"
MAX_SESSIONS_TOLD = 1000  # per team and web process
INSTRUCTIONS = ("The tools of one team of an Autocoder portal: each tool is a command of a "
                "plugin the team approved. Calls run in the portal's sandbox with the team's "
                "settings and are logged.")


def grant_of(ctx: ServerRequestContext[Any, Any]) -> Grant:
    """The grant tools/mcp/asgi.py put on the HTTP request (every request has one)."""
    request = ctx.request
    grant = request.scope.get(GRANT_KEY) if request is not None else None
    if not isinstance(grant, Grant):
        raise RuntimeError("an MCP request reached the server without a checked token")
    return grant


def _in_thread(function: Any) -> Any:
    """Django's ORM is synchronous: run `function` in a worker thread, with the connection
    handling of a request (stale connections closed before and after)."""
    def run(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return function(*args, **kwargs)
        finally:
            close_old_connections()
    return sync_to_async(run, thread_sensitive=False)


def _tool(entry: ToolEntry) -> types.Tool:
    return types.Tool(
        name=entry.name, title=entry.title, description=entry.description,
        input_schema=entry.input_schema, output_schema=entry.output_schema,
        # The truth we know: a tool that may reach another system is not read-only and
        # talks to an open world; one that reaches nothing may still update its own storage.
        annotations=types.ToolAnnotations(
            title=entry.title, read_only_hint=False,
            destructive_hint=None if entry.sends else False,
            open_world_hint=entry.sends))


def _no_header_parameters(name: str) -> None:
    """What the SDK checks a 2026-era call's `Mcp-Param-*` headers against: the parameters a
    tool's input schema marks with `x-mcp-header`, and ours mark none (tools/mcp/catalogue.py),
    so there is nothing to check. Without this the SDK ran the whole tools/list before each
    call to find the schema."""
    return None


class ToolServer:
    """The handlers, and the connected sessions and listen streams of each team."""

    def __init__(self) -> None:
        self.server: Server[Any] = Server(
            "autocoder-tools", version="1", title="Autocoder team tools",
            instructions=INSTRUCTIONS, on_list_tools=self.list_tools,
            on_call_tool=self.call_tool, on_subscriptions_listen=self.listen,
            get_tool_input_schema=_no_header_parameters)
        self.options = self.server.create_initialization_options(
            NotificationOptions(tools_changed=True))
        # team id -> {session id: a session of the handshake era that listed its tools}
        self._sessions: dict[int, dict[str, ServerSession]] = {}
        # team id -> the bus of that team's 2026-era listen streams
        self._buses: dict[int, InMemorySubscriptionBus] = {}
        self._listeners: dict[int, ListenHandler] = {}

    async def list_tools(self, ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        grant = grant_of(ctx)
        self._remember(ctx, grant)
        entries = await _in_thread(tools_for)(grant)
        return types.ListToolsResult(tools=[_tool(entry) for entry in entries])

    async def call_tool(self, ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        grant = grant_of(ctx)
        self._remember(ctx, grant)
        return await _in_thread(_call)(grant, params.name, dict(params.arguments or {}))

    async def listen(self, ctx: ServerRequestContext[Any, Any],
                     params: types.SubscriptionsListenRequestParams
                     ) -> types.SubscriptionsListenResult:
        grant = grant_of(ctx)
        if grant.team_id not in self._listeners:
            self._buses[grant.team_id] = InMemorySubscriptionBus()
            self._listeners[grant.team_id] = ListenHandler(self._buses[grant.team_id])
        return await self._listeners[grant.team_id](ctx, params)

    def _remember(self, ctx: ServerRequestContext[Any, Any], grant: Grant) -> None:
        """Keep a handshake-era session, to tell it when the team's tools change."""
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or ctx.request is None:
            return
        session_id = ctx.request.headers.get("mcp-session-id")
        if session_id:
            sessions = self._sessions.setdefault(grant.team_id, {})
            sessions.pop(session_id, None)  # newest last
            sessions[session_id] = ctx.session
            while len(sessions) > MAX_SESSIONS_TOLD:  # the oldest have most likely gone
                sessions.pop(next(iter(sessions)))

    def forget(self, session_id: str) -> None:
        """A session its client ended (DELETE) is told nothing more."""
        for sessions in self._sessions.values():
            sessions.pop(session_id, None)

    async def tools_changed(self, team_id: int) -> None:
        """`notifications/tools/list_changed` to every session and listen stream of the team
        in this process; a session that has gone is forgotten."""
        for session_id, session in list(self._sessions.get(team_id, {}).items()):
            try:
                await session.send_tool_list_changed()
            except Exception:  # closed, or its client gone: it will not be told again
                logger.debug("MCP session %s is gone", session_id, exc_info=True)
                self._sessions.get(team_id, {}).pop(session_id, None)
        bus = self._buses.get(team_id)
        if bus is not None:
            await bus.publish(ToolsListChanged())

    async def changes_follow(self) -> None:
        """Pass on the announcements of tools/services/tool_changes.py until cancelled,
        reconnecting to Redis after an outage."""
        while True:
            try:
                client = aioredis.Redis.from_url(settings.REDIS_URL)
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            await self.tools_changed(int(message["data"]))
            except (aioredis.RedisError, OSError, ValueError):
                logger.warning("MCP: lost the tools' change announcements; reconnecting",
                               exc_info=True)
                await anyio.sleep(1)


def _call(grant: Grant, name: str, arguments: dict[str, object]) -> types.CallToolResult:
    """One call through the road every call takes (tools/services/invocations.py)."""
    found = tool_find(grant, name)
    if found is None:
        return _error(f"There is no tool {name!r} for this token: list the tools again, it may "
                      "have been switched off.")
    activation, command = found
    try:
        invocation = invocation_call(activation=activation, token_id=grant.token_id,
                                     command=command,
                                     payload=arguments, via=Invocation.Caller.MCP)
    except InvocationRefused as exc:
        return _error(exc.said_at(grant.base_url) if exc.url else str(exc))
    if invocation.status != Invocation.Status.OK:
        return _error(invocation.error or "The tool failed without saying why.")
    output = invocation.output
    structured = output if isinstance(output, dict) else {"result": output}
    text = json.dumps(output, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                structured_content=structured)


def _error(words: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=words)],
                                is_error=True)
