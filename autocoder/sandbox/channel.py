"""A channel from a running job to the host: one Unix socket, served for that run only.

The sandbox keeps no network; a Unix socket is a file, and connecting to it needs no network
(AF_UNIX path names are looked up in the file system, not in the network namespace). The host
binds the socket before the job starts, in a directory the job sees:

* bwrap: the job's own workdir, `.autocoder/channel.sock` (the workdir is bound into the
  sandbox, also for a prepared sandbox: nothing is added to bwrap's command line);
* docker: a short-lived host directory bound read-only at /run/autocoder in the container.

A thread serves it while the job runs: each request is one JSON object, framed by its length
(4 bytes, big-endian, then that many bytes of UTF-8 JSON), and gets one answer, framed the same
way, from `handler(request)`. Only the handler is reachable through it. What cannot be read as
a JSON object, or is larger than MAX_MESSAGE_BYTES, gets an error answer
(`{"ok": False, "error": ..., "error_kind": "bad_request"}`); a handler that raises gets
`error_kind` "host_error" and is logged. `close()` (the backend calls it when the job has
ended, killed at its time limit or not) stops the thread, closes every connection and
removes the socket file.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autocoder.sandbox.types import SandboxError

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], dict[str, Any]]

SOCKET_NAME = "channel.sock"
BWRAP_DIR = ".autocoder"  # inside the workdir
DOCKER_DIR = "/run/autocoder"  # the container's mount point of the channel's directory
MAX_MESSAGE_BYTES = 8 * 1024 * 1024  # one request (a body travels as base64 in it)
MAX_CONNECTIONS = 8  # open at the same time; more are closed at once
SEND_TIMEOUT_S = 5.0  # a job that does not read its answer loses its connection
JOIN_TIMEOUT_S = 2.0
HEADER = 4


def inside_path(backend: str) -> str:
    """Where the job finds the socket, for a run on `backend`."""
    if backend == "docker":
        return f"{DOCKER_DIR}/{SOCKET_NAME}"
    return f"/workdir/{BWRAP_DIR}/{SOCKET_NAME}"


def refusal(error: str, kind: str = "bad_request") -> dict[str, Any]:
    return {"ok": False, "error": error, "error_kind": kind}


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, allow_nan=False).encode("utf-8", "replace")
    return len(body).to_bytes(HEADER, "big") + body


class Channel:
    """The host's end of one run's channel: `open` before the job starts, `close` after."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.path: Path | None = None
        self.answered = 0  # requests answered, refusals included
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = -1, -1
        self._stopping = False

    def open(self, directory: Path, *, owner: tuple[int, int] | None = None,
             mode: int = 0o600) -> Path:
        """Bind the socket in `directory` (made if missing) and start serving it;
        SandboxError when that fails."""
        path = directory / SOCKET_NAME
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            directory.mkdir(mode=0o755, exist_ok=True)
            _bind(listener, directory, path)
            if owner is not None and os.geteuid() == 0:
                os.chown(directory, *owner, follow_symlinks=False)
                os.chown(path, *owner, follow_symlinks=False)
            os.chmod(path, mode)
            listener.listen(MAX_CONNECTIONS)
            listener.setblocking(False)
        except OSError as exc:
            listener.close()
            raise SandboxError(f"the job's channel to the host could not be opened at {path}:"
                               f" {exc}") from exc
        except BaseException:
            listener.close()
            raise
        self._listener, self.path = listener, path
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._serve, name=f"sandbox-channel-{path.parent}",
                                        daemon=True)
        self._thread.start()
        return path

    def close(self) -> None:
        """Stop serving: the thread ends, connections close, the socket file goes."""
        if self._thread is None:
            return
        self._stopping = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self._thread.join(JOIN_TIMEOUT_S)
        if self._thread.is_alive():  # a handler still busy: it sees _stopping when it returns
            logger.warning("the sandbox channel's handler is still busy after the run ended")
        os.close(self._wake_w)
        self._thread = None
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    @property
    def serving(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the thread ---------------------------------------------------------------------

    def _serve(self) -> None:
        assert self._listener is not None
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ, None)
        selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        buffers: dict[socket.socket, bytearray] = {}
        try:
            while not self._stopping:
                # connections first: one the job closed frees its place before the next
                # connection is accepted (both are ready by then: Unix sockets are local)
                ready = sorted(selector.select(), key=lambda event: event[0].data != "conn")
                for key, _ in ready:
                    if key.data == "wake" or self._stopping:
                        return
                    if key.data is None:
                        self._accept(selector, buffers)
                    else:
                        self._read(key.fileobj, selector, buffers)  # type: ignore[arg-type]
        except Exception:  # never the host's process: the run goes on without its channel
            logger.exception("the sandbox channel failed")
        finally:
            for conn in list(buffers):
                conn.close()
            self._listener.close()
            selector.close()
            os.close(self._wake_r)

    def _accept(self, selector: selectors.BaseSelector,
                buffers: dict[socket.socket, bytearray]) -> None:
        assert self._listener is not None
        try:
            conn, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        if len(buffers) >= MAX_CONNECTIONS:
            conn.close()
            return
        conn.setblocking(False)
        buffers[conn] = bytearray()
        selector.register(conn, selectors.EVENT_READ, "conn")

    def _read(self, conn: socket.socket, selector: selectors.BaseSelector,
              buffers: dict[socket.socket, bytearray]) -> None:
        try:
            chunk = conn.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn, selector, buffers)
            return
        buffer = buffers[conn]
        buffer += chunk
        while len(buffer) >= HEADER and not self._stopping:
            size = int.from_bytes(buffer[:HEADER], "big")
            if size > MAX_MESSAGE_BYTES:
                self._send(conn, refusal(
                    f"the request is {size} bytes; the limit is {MAX_MESSAGE_BYTES} bytes"))
                self._drop(conn, selector, buffers)
                return
            if len(buffer) < HEADER + size:
                return
            body = bytes(buffer[HEADER:HEADER + size])
            del buffer[:HEADER + size]
            if not self._send(conn, self._answer(body)):
                self._drop(conn, selector, buffers)
                return

    def _answer(self, body: bytes) -> dict[str, Any]:
        self.answered += 1
        try:
            request = json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError):
            return refusal("the request is not a JSON message")
        if not isinstance(request, dict):
            return refusal("the request is not a JSON object")
        try:
            answer = self.handler(request)
        except Exception:
            logger.exception("the sandbox channel's handler failed")
            return refusal("the host could not carry out the request (an error of the"
                           " portal, not of the plugin)", "host_error")
        if not isinstance(answer, dict):
            logger.error("the sandbox channel's handler answered %r", type(answer))
            return refusal("the host could not carry out the request", "host_error")
        return answer

    def _send(self, conn: socket.socket, answer: dict[str, Any]) -> bool:
        try:
            data = frame(answer)
        except (TypeError, ValueError):
            logger.exception("the sandbox channel's handler answered something not JSON")
            data = frame(refusal("the host could not carry out the request", "host_error"))
        try:
            conn.settimeout(SEND_TIMEOUT_S)
            conn.sendall(data)
            conn.setblocking(False)
        except OSError:
            return False
        return True

    @staticmethod
    def _drop(conn: socket.socket, selector: selectors.BaseSelector,
              buffers: dict[socket.socket, bytearray]) -> None:
        selector.unregister(conn)
        buffers.pop(conn, None)
        conn.close()


def _bind(listener: socket.socket, directory: Path, path: Path) -> None:
    """Bind at `path`; a path longer than sun_path holds is reached through the directory's
    descriptor (/proc/self/fd/N/NAME), which is short."""
    if len(os.fsencode(path)) < 100:
        listener.bind(str(path))
        return
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        listener.bind(f"/proc/self/fd/{fd}/{path.name}")
    finally:
        os.close(fd)

