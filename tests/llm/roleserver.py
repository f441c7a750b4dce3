"""An OpenAI-compatible chat server on 127.0.0.1 that answers each role from a queue of its own,
streamed as server-sent events: a stand-in for a hosted model we cannot reach, which can stop a
reply at its cap (`finish_reason: "length"`) or answer late.

The role is read from the request's system message ("You are the architect ..."), or named by
the test's own `role_of`. Every request is kept, so a test can check what went over the wire.
Each role's replies are taken in order; the last one repeats.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ROLE = re.compile(r"You are the (analyst|architect|implementer|tester|reviewer|reflector)\b")


@dataclass(frozen=True)
class Said:
    """One reply: its text, how it ends ("stop", or "length" at the cap), and how long the
    server waits before its first token."""

    text: str
    finish: str = "stop"
    delay_s: float = 0.0


def role_in_prompt(body: dict[str, Any]) -> str:
    found = _ROLE.search(" ".join(str(m.get("content", "")) for m in body.get("messages", [])))
    return found.group(1) if found else ""


@dataclass
class RoleServer:
    replies: dict[str, list[Said]]
    role_of: Callable[[dict[str, Any]], str] = role_in_prompt
    requests: list[dict[str, Any]] = field(default_factory=list)
    chunk_chars: int = 40

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._taken: dict[str, int] = {}
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> RoleServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def asked(self, role: str) -> list[dict[str, Any]]:
        """The request bodies that asked `role`, in order."""
        return [body for body in self.requests if self.role_of(body) == role]

    def _next(self, body: dict[str, Any]) -> Said:
        role = self.role_of(body)
        with self._lock:
            self.requests.append(body)
            queue = self.replies.get(role) or [Said("")]
            taken = self._taken.get(role, 0)
            self._taken[role] = taken + 1
        return queue[min(taken, len(queue) - 1)]

    def _events(self, said: Said) -> list[dict[str, Any]]:
        pieces = [said.text[i:i + self.chunk_chars]
                  for i in range(0, len(said.text), self.chunk_chars)]
        events: list[dict[str, Any]] = [
            {"model": "stub", "choices": [{"index": 0, "delta": {"content": piece},
                                           "finish_reason": None}]} for piece in pieces]
        events.append({"model": "stub", "choices": [{"index": 0, "delta": {},
                                                     "finish_reason": said.finish}]})
        words = len(said.text.split())
        events.append({"model": "stub", "choices": [], "usage": {
            "prompt_tokens": 100, "completion_tokens": words, "total_tokens": 100 + words}})
        return events

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                said = server._next(body)
                if said.delay_s:
                    time.sleep(said.delay_s)
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("connection", "close")
                    self.end_headers()
                    for event in server._events(said):
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                        self.wfile.flush()
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting
                self.close_connection = True

        return Handler
