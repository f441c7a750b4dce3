"""HTTP through Django's WSGI handler inside the ASGI server, in one switch to a worker thread.

Django's own ASGI handler runs our synchronous middleware and views in a worker thread too, but
switches between the event loop and that thread about seven times per request (the request
signals, every synchronous middleware next to an asynchronous one, each `process_view`, closing
the response). Each switch wakes a thread and the event loop; under load those switches cost
about as much CPU as rendering a page. Every view of the portal is synchronous, so the bridge
reads the request body on the event loop, runs the whole WSGI request in one switch and sends
the buffered answer from the event loop. Websockets still go through Channels (config/asgi.py).
See docs/operating.md, "Processes and load".
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import Any

from asgiref.sync import sync_to_async
from asgiref.wsgi import WsgiToAsgiInstance

from autocoder.connection_shares import ConnectionShares

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# Request bodies up to this size stay in memory; larger uploads spill to a temporary file.
BODY_IN_MEMORY_BYTES = 256 * 1024


access_log = logging.getLogger("autocoder.access")

# The tools' API calls mostly wait (for the plugin's sandbox, for PostgreSQL), so they run several
# at once per process, in threads of their own, where pages are answered one at a time
# (docs/operating.md, "Processes and load"; docs/tools.md, "Throughput").
CONCURRENT_PATHS = ("/api/tools/",)
CONCURRENT_THREADS = 4


@functools.cache
def _concurrent() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=CONCURRENT_THREADS, thread_name_prefix="api-call")


class BufferedWsgiBridge:
    """An ASGI application that answers HTTP with a WSGI application, buffering the answer;
    with `log_access`, one line per request (client, method, path, status, size, time)."""

    def __init__(self, wsgi_application: Callable[..., Any], *, log_access: bool = False,
                 shares: ConnectionShares | None = None) -> None:
        self.wsgi_application = wsgi_application
        self.log_access = log_access
        self.shares = shares

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        instance = _Request(self.wsgi_application)
        client = scope.get("client")
        if self.shares is not None and client:
            instance.close_connection = self.shares.should_close(
                (client[0], client[1]), kept_alive=_keeps_alive(scope))
        await instance(scope, receive, send)
        if self.log_access and instance.answered is not None:
            status, size = instance.answered
            client = (scope.get("client") or ("-",))[0]
            query = scope.get("query_string", b"").decode("latin-1")
            access_log.info('%s "%s %s%s" %s %s %.0fms', client, scope.get("method", ""),
                            scope.get("path", ""), f"?{query}" if query else "", status, size,
                            (time.perf_counter() - started) * 1000)


def _keeps_alive(scope: Scope) -> bool:
    """Whether the client keeps its connection after this answer (RFC 9112, section 9.3)."""
    tokens = {token.strip().lower() for name, value in scope.get("headers", ())
              if name.lower() == b"connection" for token in value.split(b",")}
    if scope.get("http_version") == "1.0":
        return b"keep-alive" in tokens
    return b"close" not in tokens


class _Request(WsgiToAsgiInstance):  # type: ignore[misc]
    """One request: asgiref's environ and start_response, our single-switch run."""

    answered: tuple[int, int] | None = None  # (status, body bytes) once sent
    close_connection = False  # answer with "Connection: close" (autocoder/connection_shares.py)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope = scope
        with SpooledTemporaryFile(max_size=BODY_IN_MEMORY_BYTES) as body:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # the client left before sending its body: nobody to answer
                body.write(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body.seek(0)
            if scope.get("path", "").startswith(CONCURRENT_PATHS):
                start, content = await sync_to_async(self._run, thread_sensitive=False,
                                                      executor=_concurrent())(body)
            else:
                start, content = await sync_to_async(self._run)(body)
        if self.close_connection:
            start = {**start, "headers": [*start["headers"], (b"connection", b"close")]}
        await send(start)
        await send({"type": "http.response.body", "body": content})
        self.answered = (int(start["status"]), len(content))

    def _run(self, body: Any) -> tuple[Message, bytes]:
        environ = self.build_environ(self.scope, body)
        result = self.wsgi_application(environ, self.start_response)
        try:
            content = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()  # Django's request_finished: returns the DB connection, etc.
        if self.response_content_length is not None:
            content = content[:self.response_content_length]
        return self.response_start, content
