"""What one `api.http` request costs over the same request made by the host (`manage.py
bench_http`).

A loopback HTTP server answers `GET /item?n=N` with a small JSON object. The same handler
carries out every request: the HTTP gate (`HttpGate(policy).perform`, the loopback address in
its internal hosts) when autocoder/calling/http_gate.py exists, else a minimal direct urllib
request (the figures say which). Measured:

* direct: the host process calls the handler with the request message, N times;
* through the channel: a plugin in the real sandbox calls `api.http.get` N times in one call
  and times each call inside the sandbox (the message built, sent over the run's Unix socket,
  the handler, the answer read back and decoded).

The overhead of a request is measured pairwise: the time the plugin waited for it minus the
time the handler took for that same request (what the channel, the message's encoding and
decoding and the sandbox add); its p50 and p95 are the figures. The direct figures are
printed next to them for scale; rounds alternate between the two so that the machine's other
load falls on both. Goal: p50 <= 5 ms.
"""

from __future__ import annotations

import base64
import json
import logging
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from autocoder.calling.invoke import HttpHandler

GOAL_P50_MS = 5.0
ROUNDS = 3

PLUGIN = '''import time


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        samples = []
        for n in range(payload["count"]):
            started = time.perf_counter()
            answer = self.api.http.get(payload["url"], params={"n": n})
            samples.append((time.perf_counter() - started) * 1000)
            if answer.status != 200 or answer.json()["n"] != n:
                raise ValueError(f"unexpected answer {answer.status}: {answer.text[:200]}")
        return samples
'''


class _Item(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        n = self.path.partition("n=")[2] or "0"
        body = json.dumps({"n": int(n), "text": "hello"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextmanager
def loopback_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Item)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="bench-http-server",
                              daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/item"
    finally:
        server.shutdown()
        server.server_close()


def _urllib_forward(request: dict[str, Any]) -> dict[str, Any]:
    """Until the gate exists: the request as it is, with urllib, to the loopback server."""
    query = "&".join(f"{k}={v}" for k, v in (request.get("params") or {}).items())
    url = request["url"] + (f"?{query}" if query else "")
    if not url.startswith("http://127.0.0.1:"):
        raise ValueError("the bench forwards to its own loopback server only")
    asked = urllib.request.Request(url, method=request["method"])  # noqa: S310 (checked above)
    with urllib.request.urlopen(asked, timeout=request.get("timeout") or 10) as response:  # noqa: S310
        body = response.read()
        return {"ok": True, "status": response.status, "headers": dict(response.headers),
                "body_b64": base64.b64encode(body).decode(), "url": url}


def _handler(url: str, count: int, urllib_only: bool
             ) -> tuple[Callable[[], HttpHandler], str]:
    """A maker of one call's handler, and what it is in words."""
    if urllib_only:
        return (lambda: _urllib_forward), "a minimal direct urllib request (--urllib)"
    try:
        from autocoder.calling.http_gate import HttpGate, HttpPolicy
        from autocoder.plugins.hosts import parse_host_rule
    except ImportError:
        return (lambda: _urllib_forward), ("a minimal direct urllib request (the HTTP gate,"
                                           " autocoder/calling/http_gate.py, does not exist"
                                           " yet)")
    port = url.split(":")[2].split("/")[0]
    policy = HttpPolicy(hosts=(parse_host_rule(f"http://127.0.0.1:{port}"),),
                        internal_hosts=frozenset({"127.0.0.1"}), max_requests=count + 10)
    return (lambda: HttpGate(policy).perform), ("the HTTP gate (HttpGate(policy).perform,"
                                                " internal_hosts={'127.0.0.1'})")


def _timed(perform: HttpHandler, handled: list[float]) -> HttpHandler:
    def timed(request: dict[str, Any]) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            return perform(request)
        finally:
            handled.append((time.perf_counter() - started) * 1000)

    return timed


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class ChannelFigures(TypedDict):
    """What `measure` prints: milliseconds per request, direct and through the channel."""

    requests: int
    handled_by: str
    direct_p50_ms: float
    direct_p95_ms: float
    channel_p50_ms: float
    channel_p95_ms: float
    goal_p50_ms: float
    overhead_p50_ms: float
    overhead_p95_ms: float


def measure(count: int = 100, *, urllib_only: bool = False) -> ChannelFigures:
    from autocoder.calling.invoke import InvokeLimits, PluginCall, call_plugin

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    count = max(5, count)
    files = {"bench_http/__init__.py": "", "bench_http/plugin.py": PLUGIN}
    limits = InvokeLimits(timeout_s=max(30.0, count * 0.2), cpu_s=30)
    direct: list[float] = []
    channel: list[float] = []
    overhead: list[float] = []
    with loopback_server() as url:
        make, handled_by = _handler(url, count, urllib_only)
        warm = make()
        for n in range(5):  # the server's, the resolver's and the gate's first uses
            warm({"method": "GET", "url": url, "params": {"n": str(n)}, "headers": {}})
        for _ in range(ROUNDS):
            perform = make()
            for n in range(count):
                request = {"method": "GET", "url": url, "params": {"n": str(n)},
                           "headers": {}}
                started = time.perf_counter()
                answer = perform(request)
                direct.append((time.perf_counter() - started) * 1000)
                if not answer.get("ok"):
                    raise RuntimeError(f"the direct request failed: {answer}")
            handled: list[float] = []
            outcome = call_plugin(PluginCall(files=files, entry="bench_http.plugin:Plugin",
                                             command="go", payload={"url": url, "count": count}),
                                  limits, http=_timed(make(), handled))
            if not outcome.ok:
                raise RuntimeError(f"the plugin's requests failed: {outcome.error}"
                                   f" {outcome.detail[-500:]}")
            # the first request pays for the client's imports and connection: left out
            channel.extend(outcome.output[1:])
            overhead.extend(c - h for c, h in zip(outcome.output[1:], handled[1:], strict=True))
    return {
        "requests": count * ROUNDS, "handled_by": handled_by,
        "direct_p50_ms": round(statistics.median(direct), 3),
        "direct_p95_ms": round(_percentile(direct, 0.95), 3),
        "channel_p50_ms": round(statistics.median(channel), 3),
        "channel_p95_ms": round(_percentile(channel, 0.95), 3),
        "goal_p50_ms": GOAL_P50_MS,
        "overhead_p50_ms": round(statistics.median(overhead), 3),
        "overhead_p95_ms": round(_percentile(overhead, 0.95), 3),
    }
