"""`/mcp/<team>/`: the team's tools over MCP's Streamable HTTP, in front of the SDK's session
manager (tools/mcp/server.py), and the protected-resource metadata of each team's address.

Before a request reaches the SDK: its Origin, when it sends one, is this portal's own or one
configured in MCP_ALLOWED_ORIGINS (else 403: a web page must not drive a member's assistant
connection, DNS rebinding); its bearer token is a live tool token of this team (else 401 with
the `WWW-Authenticate` of RFC 9728 that the MCP authorization specification asks for, naming
the metadata document). The metadata names no authorization server yet: tool tokens are made on
the tokens page or by `manage.py tool_token`; OAuth 2.1 can follow by naming the portal there.
docs/tools.md, "From an assistant (MCP)".
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.authentication import AuthCredentials

from tools.mcp.catalogue import Grant
from tools.mcp.server import GRANT_KEY, ToolServer
from tools.selectors import token_by_raw
from tools.services.tokens import tool_token_used

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = re.compile(r"^/mcp/(?P<team>[-a-zA-Z0-9_]+)/?$")
METADATA_PATH = re.compile(
    r"^/\.well-known/oauth-protected-resource/mcp/(?P<team>[-a-zA-Z0-9_]+)/?$")
SCOPE = "tools"
LISTEN = "subscriptions/listen"  # the 2026-era stream of list_changed
READ_AHEAD_BYTES = 64 * 1024  # of a request without a session, to see its method
MAX_SESSIONS_NOTED = 20_000  # twice the SDK's limit of open sessions per process
NEEDS_BEARER = ("A tool token is needed: Authorization: Bearer <token>. A team admin makes one "
                "on a tool's tokens page.")
REFUSED_WORDS = ("This token is not valid here: it may have been revoked, or be for another "
                 "team.")


def team_mcp_path(slug: str) -> str:
    return f"/mcp/{slug}/"


def metadata_path(slug: str) -> str:
    return f"/.well-known/oauth-protected-resource/mcp/{slug}/"


def _headers(scope: Scope) -> dict[str, str]:
    return {key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope.get("headers", [])}


def _base(scope: Scope, headers: dict[str, str]) -> str:
    """The portal's address as the client reached it, https behind a proxy that says so
    (SECURE_PROXY_SSL_HEADER, as Django reads it for the pages)."""
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        name, value = proxy
        said = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower(), "")
        scheme = "https" if said.split(",")[0].strip() == value else scheme
    return f"{scheme}://{headers.get('host', '')}"


async def _answer(send: Send, status: int, body: dict[str, object],
                  extra: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()), *extra]})
    await send({"type": "http.response.body", "body": data})


def origin_allowed(origin: str | None, base: str) -> bool:
    """No Origin (a program, not a web page), this portal's own, or a configured one
    (MCP_ALLOWED_ORIGINS, or the origins trusted for the pages' forms)."""
    if not origin:
        return True
    allowed = {base, *settings.MCP_ALLOWED_ORIGINS, *settings.CSRF_TRUSTED_ORIGINS}
    return origin.rstrip("/") in {item.rstrip("/") for item in allowed}


def _grant_for(raw: str, slug: str, base: str) -> Grant | None:
    close_old_connections()
    try:
        token = token_by_raw(raw)
        if token is None or token.team.slug != slug:
            return None
        tool_token_used(token=token)
        return Grant(token_id=token.pk, team_id=token.team_id, team_slug=slug,
                     plugin_id=token.plugin_id, base_url=base)
    finally:
        close_old_connections()


class McpGateway:
    """Routes the MCP paths to the SDK (started on the first request: the ASGI server, daphne,
    sends no lifespan events) and everything else to `app`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.tools = ToolServer()
        # A request is answered with one JSON body (the SDK's json_response): a tools/call
        # needs no stream of its own, and an SSE answer per call cost the server a fifth of a
        # call's CPU (docs/tools.md, "Throughput"). `list_changed` reaches a handshake-era
        # session on its GET stream; a 2026-era `subscriptions/listen` is a stream, and goes
        # to `self.streams`.
        self.manager = StreamableHTTPSessionManager(app=self.tools.server, json_response=True)
        self.streams = StreamableHTTPSessionManager(app=self.tools.server)
        # A handshake-era session lives in the web process that opened it; a request of it that
        # reaches another process is answered there without the session (see _route).
        self.stateless = StreamableHTTPSessionManager(app=self.tools.server, stateless=True)
        self._sessions: dict[str, None] = {}  # this process's session ids, oldest first
        self._ready: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        found = MCP_PATH.match(path) or METADATA_PATH.match(path)
        if found is None:
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host", "").rsplit(":", 1)[0].strip("[]")
        if not validate_host(host, settings.ALLOWED_HOSTS):
            await _answer(send, 400, {"error": "This portal does not answer to that host name."})
            return
        base = _base(scope, headers)
        if not origin_allowed(headers.get("origin"), base):
            await _answer(send, 403, {"error": "Requests from that web page's origin are "
                                               "refused (see MCP_ALLOWED_ORIGINS)."})
            return
        slug = found.group("team")
        if path.startswith("/.well-known/"):
            await _answer(send, 200, self.metadata(base, slug),
                          [(b"access-control-allow-origin", b"*")])
            return
        await self._mcp(scope, receive, send, headers, base, slug)

    def metadata(self, base: str, slug: str) -> dict[str, object]:
        """RFC 9728 protected-resource metadata of the team's MCP address."""
        return {"resource": base + team_mcp_path(slug), "bearer_methods_supported": ["header"],
                "scopes_supported": [SCOPE], "resource_name": f"Autocoder tools of {slug}"}

    async def _mcp(self, scope: Scope, receive: Receive, send: Send, headers: dict[str, str],
                   base: str, slug: str) -> None:
        scheme, _, raw = headers.get("authorization", "").partition(" ")
        raw = raw.strip() if scheme.lower() == "bearer" else ""
        grant = await sync_to_async(_grant_for, thread_sensitive=False)(raw, slug, base) \
            if raw else None
        if grant is None:
            words = REFUSED_WORDS if raw else NEEDS_BEARER
            challenge = f'Bearer resource_metadata="{base}{metadata_path(slug)}"'
            if raw:
                challenge += f', error="invalid_token", error_description="{words}"'
            await _answer(send, 401, {"error": "invalid_token", "error_description": words},
                          [(b"www-authenticate", challenge.encode())])
            return
        scope[GRANT_KEY] = grant
        # The SDK binds a session to the credential that opened it.
        scope["user"] = AuthenticatedUser(AccessToken(
            token=raw, client_id=f"tool-token-{grant.token_id}", scopes=[SCOPE],
            resource=base + team_mcp_path(slug)))
        scope["auth"] = AuthCredentials([SCOPE])
        await self._started()
        await self._route(scope, receive, send, headers)

    async def _route(self, scope: Scope, receive: Receive, send: Send,
                     headers: dict[str, str]) -> None:
        """To this process's session, or, for a POST of a session another web process holds,
        without a session: a tools/list or tools/call needs nothing a session keeps. (A GET
        stream there is answered 404, and the SDK's client tries again on a new connection.)"""
        session = headers.get("mcp-session-id")
        if session is None and scope.get("method") == "POST":
            body, receive = await _read_ahead(receive)
            manager = self.streams if _method_of(body) == LISTEN else self.manager
            await manager.handle_request(scope, receive, self._noting(send))
        elif session is None:
            await self.manager.handle_request(scope, receive, self._noting(send))
        elif session in self._sessions or scope.get("method") != "POST":
            if scope.get("method") == "DELETE":
                self._sessions.pop(session, None)
                self.tools.forget(session)
            await self.manager.handle_request(scope, receive, send)
        else:
            await self.stateless.handle_request(scope, receive, send)

    def _noting(self, send: Send) -> Send:
        """`send`, noting the session id a new session's answer gives."""
        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        self._sessions[value.decode("latin-1")] = None
                while len(self._sessions) > MAX_SESSIONS_NOTED:
                    self._sessions.pop(next(iter(self._sessions)))
            await send(message)
        return noting

    async def _started(self) -> None:
        if self._ready is None:
            self._ready = asyncio.Event()
            self._runner = asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()

    async def _run(self) -> None:
        async with self.manager.run(), self.streams.run(), self.stateless.run(), \
                anyio.create_task_group() as group:
            group.start_soon(self.tools.changes_follow)
            assert self._ready is not None
            self._ready.set()
            await anyio.sleep_forever()


async def _read_ahead(receive: Receive) -> tuple[bytes, Receive]:
    """The request's body (up to READ_AHEAD_BYTES: a larger one is the SDK's to refuse) and a
    `receive` that gives the whole request again."""
    messages: list[Message] = []
    size = 0
    while size <= READ_AHEAD_BYTES:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(m.get("body", b"") for m in messages if m["type"] == "http.request")

    async def replay() -> Message:
        return messages.pop(0) if messages else await receive()
    return body, replay


def _method_of(body: bytes) -> str:
    """The JSON-RPC method of a request's body ("" for anything else)."""
    try:
        message = json.loads(body)
    except ValueError:
        return ""
    method = message.get("method") if isinstance(message, dict) else None
    return method if isinstance(method, str) else ""


def mcp_or(app: ASGIApp) -> ASGIApp:
    """`app` with the team MCP addresses in front of it (config/asgi.py)."""
    return McpGateway(app)
