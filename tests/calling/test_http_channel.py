"""The channel between a running plugin and the host (autocoder/sandbox/channel.py) and the
plugin's `api.http` over it (host_runner.py), on the real bwrap sandbox: what the host's
handler sees, what the plugin gets back, secrets as references, garbage on the socket, no
network besides it, and the channel's end with the call."""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from autocoder.calling.invoke import InvokeLimits, PluginCall, call_plugin
from autocoder.sandbox import channel as channel_module
from autocoder.sandbox.channel import Channel
from tests.sandbox.backends import use_backend

LIMITS = InvokeLimits(timeout_s=8, cpu_s=4, memory_mb=256)


def run(source: str, payload: dict[str, Any] | None = None, *, limits: InvokeLimits = LIMITS,
        **kwargs: Any) -> Any:
    settings = kwargs.pop("settings", {})
    secret_settings = kwargs.pop("secret_settings", ())
    files = {"web/__init__.py": "", "web/plugin.py": source}
    return call_plugin(PluginCall(files=files, entry="web.plugin:Plugin", command="go",
                                  payload=payload or {}, settings=settings,
                                  secret_settings=secret_settings), limits, **kwargs)


def answer(body: bytes = b'{"hello": "world"}', status: int = 200,
           headers: dict[str, str] | None = None, url: str = "") -> dict[str, Any]:
    return {"ok": True, "status": status,
            "headers": headers or {"Content-Type": "application/json; charset=utf-8"},
            "body_b64": base64.b64encode(body).decode(), "url": url}


class Recorder:
    """A handler that keeps what it was asked and answers with `reply(request)`."""

    def __init__(self, reply: Any = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = reply or (lambda request: answer(url=request["url"]))

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(json.loads(json.dumps(request)))
        result: dict[str, Any] = self.reply(request)
        return result


def channel_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("sandbox-channel-")]


GET = '''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        http = self.api.http
        r = http.get("https://api.example.com/items", params={"page": 2, "tag": ["a", "b"]},
                     headers={"Accept": "application/json"}, timeout=3)
        posted = http.post("https://api.example.com/items", json={"name": "x"})
        form = http.put("https://api.example.com/form", data={"a": "1"})
        raw = http.patch("https://api.example.com/raw", content=b"\\x00\\x01")
        gone = http.delete("https://api.example.com/items/1")
        return {"status": r.status, "ok": r.ok, "json": r.json(), "text": r.text,
                "content": list(r.content[:3]), "type": r.headers["content-type"],
                "TYPE": r.headers.get("CONTENT-TYPE"), "url": r.url,
                "others": [posted.status, form.status, raw.status, gone.status]}
'''


@pytest.mark.usefixtures("on_each_backend")
def test_a_plugin_gets_the_handlers_answer_and_the_handler_sees_the_message() -> None:
    handler = Recorder()
    records = [{"method": "GET", "host": "api.example.com"}]
    outcome = run(GET, http=handler, records=lambda: records)
    assert outcome.ok, outcome
    assert outcome.output == {
        "status": 200, "ok": True, "json": {"hello": "world"}, "text": '{"hello": "world"}',
        "content": [123, 34, 104], "type": "application/json; charset=utf-8",
        "TYPE": "application/json; charset=utf-8", "url": "https://api.example.com/items",
        "others": [200, 200, 200, 200]}
    first, posted, form, raw, gone = handler.requests
    assert first == {"method": "GET", "url": "https://api.example.com/items",
                     "params": {"page": "2", "tag": ["a", "b"]},
                     "headers": {"Accept": "application/json"}, "timeout": 3.0}
    assert posted["method"] == "POST" and posted["json"] == {"name": "x"}
    assert form["method"] == "PUT" and form["data"] == {"a": "1"}
    assert raw["method"] == "PATCH" and base64.b64decode(raw["body_b64"]) == b"\x00\x01"
    assert gone["method"] == "DELETE" and gone["params"] == {} and gone["headers"] == {}
    # no timeout asked: the host gives what is left of the call's time
    assert 0 < posted["timeout"] <= LIMITS.timeout_s
    assert outcome.http_requests == records
    assert not channel_threads()


def test_the_prepared_sandbox_serves_the_channel_call_after_call() -> None:
    """Calls after the first run in the thread's prepared sandbox (in_process)."""
    for number in range(3):
        handler = Recorder(lambda request: answer(str(request["params"]["n"]).encode()))
        outcome = run('''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        return self.api.http.get("https://a.example/", params={"n": payload["n"]}).text
''', {"n": number}, http=handler)
        assert outcome.ok, outcome
        assert outcome.output == str(number)


SECRET = '''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        api = self.api
        key = api.secret("api_key")
        api.http.get("https://api.example.com/a", auth=key,
                     headers={"X-Key": key, "X-Token": f"Token {api.secret('token')}",
                              "X-Plain": "Bearer {api_key}"},
                     params={"key": key})
        api.http.post("https://api.example.com/b", auth=("robot", api.secret("password")),
                      sign={"secret": api.secret("signing"), "header": "X-Sig"},
                      follow_redirects=False, data="raw text")
        try:
            api.http.get("https://api.example.com/c", auth="the value itself")
        except TypeError as exc:
            refused = str(exc)
        return {"repr": repr(key), "str": str(key), "refused": refused}
'''


@pytest.mark.usefixtures("on_each_backend")
def test_a_secret_is_sent_as_a_reference_never_as_its_value() -> None:
    handler = Recorder()
    outcome = run(SECRET, http=handler,
                  settings={"api_key": "sk-live-4242", "password": "hunter2",
                            "token": "tok-9", "signing": "sig-1"},
                  secret_settings=("api_key", "password", "token", "signing"))
    assert outcome.ok, outcome
    assert outcome.output["repr"] == "api.secret('api_key')"
    assert outcome.output["str"] == "{api_key}"
    assert "the plugin never holds a secret's value" in outcome.output["refused"]
    bearer, basic = handler.requests
    assert bearer["auth"] == {"secret": "api_key"}
    assert bearer["headers"] == {"X-Key": "{api_key}", "X-Token": "Token {token}",
                                 "X-Plain": "Bearer {api_key}"}
    assert bearer["params"] == {"key": "{api_key}"}
    assert basic["auth"] == {"basic": ["robot", {"secret": "password"}]}
    assert basic["sign"] == {"secret": "signing", "header": "X-Sig"}
    assert basic["follow_redirects"] is False
    assert base64.b64decode(basic["body_b64"]) == b"raw text"
    sent = json.dumps(handler.requests)
    for value in ("sk-live-4242", "hunter2", "tok-9", "sig-1"):
        assert value not in sent


NO_HOSTS = '''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        try:
            self.api.http.get("https://api.example.com/")
        except self.api.http.HttpError as exc:
            caught = [str(exc), exc.kind, isinstance(exc, Exception)]
        if payload.get("raise"):
            self.api.http.post("https://api.example.com/", json={})
        return caught
'''


def test_without_a_handler_api_http_says_the_plugin_declared_no_hosts() -> None:
    outcome = run(NO_HOSTS)
    assert outcome.ok, outcome
    sentence, kind, is_exception = outcome.output
    assert sentence.startswith("this plugin declared no hosts")
    assert "[permissions] hosts" in sentence
    assert (kind, is_exception) == ("no_hosts", True)
    failed = run(NO_HOSTS, {"raise": True})
    assert not failed.ok and failed.error_kind == "plugin_error"
    assert "HttpError: this plugin declared no hosts" in failed.error
    assert failed.http_requests == []


@pytest.mark.usefixtures("on_each_backend")
def test_a_refusal_and_a_failing_handler_reach_the_plugin_as_http_errors() -> None:
    def reply(request: dict[str, Any]) -> dict[str, Any]:
        if request["url"].endswith("/refused"):
            return {"ok": False, "error": "api.http: evil.example is not declared",
                    "error_kind": "refused"}
        if request["url"].endswith("/boom"):
            raise RuntimeError("a bug in the gate")
        return answer(b"missing", status=404, headers={"content-type": "text/plain"})

    outcome = run('''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        found = []
        for path in ("/refused", "/boom"):
            try:
                self.api.http.get("https://evil.example" + path)
            except self.api.http.HttpError as exc:
                found.append([str(exc), exc.kind])
        r = self.api.http.get("https://ok.example/missing")
        try:
            r.raise_for_status()
        except self.api.http.HttpError as exc:
            found.append([str(exc), exc.kind, exc.response.status, r.ok, r.text])
        return found
''', http=Recorder(reply))
    assert outcome.ok, outcome
    refused, boom, status = outcome.output
    assert refused == ["api.http: evil.example is not declared", "refused"]
    assert boom[1] == "host_error" and "a bug in the gate" not in boom[0]
    assert status[1:] == ["status", 404, False, "missing"]


GARBAGE = '''
import _socket


def exchange(conn, data):
    conn.sendall(data)
    head = b""
    while len(head) < 4:
        chunk = conn.recv(4 - len(head))
        if not chunk:
            return None
        head += chunk
    size = int.from_bytes(head, "big")
    body = b""
    while len(body) < size:
        body += conn.recv(size - len(body))
    return body.decode()


def framed(body):
    return len(body).to_bytes(4, "big") + body


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        path = "/workdir/.autocoder/channel.sock"
        conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        conn.connect(path)
        answers = [exchange(conn, framed(b"\\xff\\xfe not json")),
                   exchange(conn, framed(b"[1, 2, 3]")),
                   exchange(conn, framed(b"[" * 100000)),
                   exchange(conn, (2 ** 31).to_bytes(4, "big") + b"xx")]
        conn.close()
        flood, refused = [], 0
        for _ in range(20):  # more connections than the host keeps open
            extra = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            flood.append(extra)
            try:
                extra.connect(path)
                extra.sendall(b"\\x00\\x00")  # half a header, never finished
            except OSError:  # the host closed it: too many open
                refused += 1
        for extra in flood:
            extra.close()
        half = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        half.connect(path)
        half.sendall(b"\\x00\\x00\\x10\\x00{")  # a frame cut short, then gone
        half.close()
        answers.append(self.api.http.get("https://api.example.com/after").text)
        return answers + [refused]
'''


def test_garbage_on_the_socket_gets_error_answers_and_the_host_goes_on() -> None:
    handler = Recorder(lambda request: answer(b"still here"))
    outcome = run(GARBAGE, http=handler)
    assert outcome.ok, outcome
    not_json, not_object, too_deep, too_large, after, refused = outcome.output
    for text in (not_json, too_deep):
        assert json.loads(text) == {"ok": False, "error": "the request is not a JSON message",
                                    "error_kind": "bad_request"}
    assert json.loads(not_object)["error"] == "the request is not a JSON object"
    assert json.loads(too_large)["error"].startswith("the request is 2147483648 bytes")
    assert after == "still here"
    assert refused <= 20 - channel_module.MAX_CONNECTIONS
    assert [r["url"] for r in handler.requests] == ["https://api.example.com/after"]
    assert run(GET, http=Recorder()).ok  # and the next call is served as usual
    assert not channel_threads()


RAW_TCP = '''
import _socket


class Plugin:
    def on_command(self, name, payload):
        tried = []
        for family, address in ((_socket.AF_INET, ("127.0.0.1", payload["port"])),
                                (_socket.AF_INET, ("10.0.0.1", 80)),
                                (_socket.AF_INET6, ("::1", payload["port"]))):
            conn = _socket.socket(family, _socket.SOCK_STREAM)
            conn.settimeout(2)
            try:
                conn.connect(address)
                tried.append("connected")
            except OSError as exc:
                tried.append(type(exc).__name__)
            finally:
                conn.close()
        return tried
'''


@pytest.mark.usefixtures("on_each_backend")
def test_a_plugin_with_a_channel_still_has_no_network() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    try:
        outcome = run(RAW_TCP, {"port": port}, http=Recorder())
        assert outcome.ok, outcome
        assert "connected" not in outcome.output
        with pytest.raises(TimeoutError):
            server.accept()  # nothing from the sandbox reached the host's loopback
    finally:
        server.close()


@pytest.mark.usefixtures("on_each_backend")
def test_the_channel_ends_when_the_time_limit_stops_the_plugin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[Path] = []
    real_open = Channel.open

    def spy(self: Channel, directory: Path, **kwargs: Any) -> Path:
        path = real_open(self, directory, **kwargs)
        opened.append(path)
        return path

    monkeypatch.setattr(Channel, "open", spy)
    handler = Recorder()
    limits = InvokeLimits(timeout_s=2, cpu_s=2, memory_mb=256)
    started = time.monotonic()
    outcome = run('''
import time


class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        while True:
            try:
                self.api.http.get("https://api.example.com/poll")
            except self.api.http.HttpError:  # "the call's time is up", near its end
                pass
            time.sleep(0.05)
''', limits=limits, http=handler)
    assert outcome.error_kind == "timeout", outcome
    assert time.monotonic() - started < limits.timeout_s + 5
    assert handler.requests  # it was served while the call ran
    assert all(0 < r["timeout"] <= limits.timeout_s for r in handler.requests)
    assert opened and not any(os.path.lexists(path) for path in opened)
    assert not channel_threads()


# -- the channel on its own (no sandbox) ------------------------------------------------

def test_channel_close_removes_the_socket_and_ends_the_thread(tmp_path: Path) -> None:
    channel = Channel(lambda request: {"ok": True, "echo": request})
    path = channel.open(tmp_path / "dir")
    assert channel.serving and path.exists() and oct(path.stat().st_mode)[-3:] == "600"
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    conn.sendall(channel_module.frame({"a": 1}))
    size = int.from_bytes(conn.recv(4), "big")
    assert json.loads(conn.recv(size)) == {"ok": True, "echo": {"a": 1}}
    channel.close()
    assert not channel.serving and not path.exists()
    assert conn.recv(4) == b""  # the host closed it
    conn.close()
    channel.close()  # twice is fine


def test_a_long_directory_path_is_bound_through_its_descriptor(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    channel = Channel(lambda request: {"ok": True})
    path = channel.open(deep)
    try:
        assert len(str(path)) > 108 and path.exists()
    finally:
        channel.close()
    assert not path.exists()


def test_on_the_docker_backend_the_channel_is_a_read_only_mount(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No Docker engine needed: the fake client of tests/sandbox/test_docker_backend.py runs
    the container's entry program as a local process; a symlink stands in for the bind."""
    from autocoder.sandbox import docker_backend
    from tests.sandbox.test_docker_backend import FakeClient, FakeContainer

    inside = tmp_path / "run-autocoder"
    monkeypatch.setattr(channel_module, "DOCKER_DIR", str(inside))
    real_start = FakeContainer.start

    def start(self: FakeContainer) -> None:
        (host_dir, bind), = self.kwargs["volumes"].items()
        assert bind == {"bind": "/run/autocoder", "mode": "ro"}
        os.symlink(host_dir, inside)
        real_start(self)

    monkeypatch.setattr(FakeContainer, "start", start)
    client = FakeClient()
    real_run = docker_backend.run
    monkeypatch.setattr(docker_backend, "run",
                        lambda *args, **kwargs: real_run(*args, client=client, **kwargs))
    handler = Recorder(lambda request: answer(b"via docker"))
    outcome = run('''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        return self.api.http.get("https://api.example.com/").text
''', http=handler, backend="docker")
    assert outcome.ok, outcome
    assert outcome.output == "via docker"
    assert not os.path.exists(os.path.realpath(inside))  # the host directory is gone


def test_a_real_docker_engine_serves_the_channel(settings: Any) -> None:
    # skips with how to enable it when no engine and image are here; fails in CI instead
    use_backend("docker", settings)
    handler = Recorder(lambda request: answer(b"from the container"))
    outcome = run('''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        return self.api.http.get("https://api.example.com/").text
''', http=handler, backend="docker")
    assert outcome.ok, outcome
    assert outcome.output == "from the container"


def test_bench_http_measures_the_overhead_per_request() -> None:
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("bench_http", "--requests", "5", "--urllib", "--json", stdout=out)
    figures = json.loads(out.getvalue())
    assert figures["requests"] == 15 and "urllib" in figures["handled_by"]
    assert 0 <= figures["overhead_p50_ms"] <= figures["channel_p50_ms"]


@pytest.mark.usefixtures("on_each_backend")
def test_through_the_http_gate_the_service_gets_the_token_and_the_plugin_never_does() -> None:
    """The whole way: plugin -> channel -> HttpGate -> a loopback service listed in the
    internal hosts."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from autocoder.calling import http_gate
    from autocoder.plugins.hosts import parse_host_rule

    seen: list[dict[str, str]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", "0"))
            seen.append({"auth": self.headers.get("Authorization", ""),
                         "body": self.rfile.read(length).decode()})
            body = b'{"received": true}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        gate = http_gate.HttpGate(http_gate.HttpPolicy(
            hosts=(parse_host_rule(f"http://127.0.0.1:{port}"),),
            internal_hosts=frozenset({"127.0.0.1"}), secrets={"token": "tok-secret-77"}))
        outcome = run('''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        r = self.api.http.post(payload["url"], json={"text": "12 hours"},
                               auth=self.api.secret("token"))
        try:
            self.api.http.get("https://elsewhere.example/")
        except self.api.http.HttpError as exc:
            refused = exc.kind
        return {"answer": r.json(), "refused": refused}
''', {"url": f"http://127.0.0.1:{port}/hook"}, http=gate.perform,
            records=lambda: gate.records)  # the sandbox gets no settings at all here
    finally:
        server.shutdown()
        server.server_close()
    assert outcome.ok, outcome
    assert outcome.output == {"answer": {"received": True}, "refused": "refused"}
    assert seen == [{"auth": "Bearer tok-secret-77", "body": '{"text":"12 hours"}'}]
    assert [r["method"] for r in outcome.http_requests] == ["POST", "GET"]
    assert "tok-secret-77" not in json.dumps([outcome.http_requests, outcome.output,
                                              outcome.log_lines, outcome.detail])


def test_a_channel_that_cannot_be_opened_is_a_sandbox_error(tmp_path: Path) -> None:
    from autocoder.sandbox import SandboxError

    (tmp_path / "a-file").write_text("")
    channel = Channel(lambda request: {"ok": True})
    with pytest.raises(SandboxError, match="channel to the host could not be opened"):
        channel.open(tmp_path / "a-file" / "dir")
    assert not channel.serving
    channel.close()
