"""A scriptable HTTP server on 127.0.0.1, standing in for hosted LLM APIs we cannot reach.

Each queued `Reply` answers one request, in order (the last one repeats); every request is kept
with its path, headers and JSON body so tests can check what went over the wire.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str -> as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    # Server-sent events, each a complete "event/data" block; a number is a pause of that many
    # seconds (a model that writes slowly, or goes silent).
    sse: list[str | float] | None = None


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Seen] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def _next(self) -> Reply:
        with self._lock:
            if len(self.replies) > 1:
                return self.replies.pop(0)
            return self.replies[0] if self.replies else Reply(status=500, body={"error": "empty"})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._answer(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                self._answer(json.loads(raw) if raw else None)

            def _answer(self, body: Any) -> None:
                with server._lock:
                    server.requests.append(Seen(self.command, self.path,
                                                {k.lower(): v for k, v in self.headers.items()},
                                                body))
                reply = server._next()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    if reply.sse is not None:
                        self._send_sse(reply)
                    else:
                        self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test); nothing to tell it

            def _send(self, reply: Reply) -> None:
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_sse(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for event in reply.sse or []:
                    if isinstance(event, (int, float)):
                        time.sleep(event)
                        continue
                    self.wfile.write(event.encode() + b"\n\n")
                    self.wfile.flush()
                self.close_connection = True

        return Handler
