"""HTTP reaches Django's WSGI handler in one switch to a worker thread (autocoder/http_bridge.py).

Django's ASGI handler switched between the event loop and its worker thread about seven times
per page, which under load cost as much CPU as rendering the page. These tests call the ASGI
application in-process, as daphne does, and check what a browser receives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref import sync
from django.test import Client

from autocoder.http_bridge import BufferedWsgiBridge
from tests.teams.conftest import Portal, portal  # noqa: F401  (fixture)

Message = dict[str, Any]


def _scope(path: str, *, method: str = "GET", headers: list[tuple[bytes, bytes]] | None = None,
           query: bytes = b"") -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
            "query_string": query, "root_path": "",
            "headers": [(b"host", b"127.0.0.1"), *(headers or [])],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}


def _call(app: Any, scope: dict[str, Any], chunks: list[bytes]) -> list[Message]:
    """Run one request through `app` the way an ASGI server does; the messages it sent."""
    incoming: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)]
    sent: list[Message] = []

    async def receive() -> Message:
        if incoming:
            return incoming.pop(0)
        await asyncio.Event().wait()  # a connection that stays open sends nothing more
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent


def _portal_application() -> Any:
    """config.asgi's application, imported without its background load of the search model
    (a page needs no search here, and the load would outlive the test)."""
    from django.conf import settings

    preload, settings.SEARCH_MODEL_PRELOAD = settings.SEARCH_MODEL_PRELOAD, False
    try:
        from config.asgi import application
    finally:
        settings.SEARCH_MODEL_PRELOAD = preload
    return application


def _echo(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
    body = environ["wsgi.input"].read()
    start_response("201 Created", [("Content-Type", "text/plain"),
                                   ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
    return iter([b"got ", body, b" for " + environ["PATH_INFO"].encode("latin-1")])


def test_a_body_sent_in_pieces_reaches_the_application_whole() -> None:
    sent = _call(BufferedWsgiBridge(_echo), _scope("/upload/", method="POST"),
                 [b"first,", b"second,", b"third"])

    start, body = sent
    assert start["status"] == 201
    assert [value for name, value in start["headers"] if name == b"set-cookie"] == [
        b"a=1", b"b=2"]
    assert body == {"type": "http.response.body", "body": b"got first,second,third for /upload/"}


def test_a_large_upload_spills_to_disk_and_arrives_intact() -> None:
    chunk = bytes(range(256)) * 4096  # 1 MiB, beyond what the bridge keeps in memory
    sent = _call(BufferedWsgiBridge(_echo), _scope("/upload/", method="POST"), [chunk, chunk])
    assert sent[1]["body"] == b"got " + chunk + chunk + b" for /upload/"


def test_the_response_is_closed_so_django_returns_its_database_connection() -> None:
    closed: list[bool] = []

    class Answer(list[bytes]):
        def close(self) -> None:
            closed.append(True)

    def app(environ: dict[str, Any], start_response: Any) -> Answer:
        start_response("200 OK", [("Content-Length", "2")])
        return Answer([b"ok", b"and more than Content-Length says"])

    sent = _call(BufferedWsgiBridge(app), _scope("/"), [b""])
    assert closed == [True]
    assert sent[1]["body"] == b"ok"  # never more than the length the headers announced


def test_a_client_that_leaves_before_its_body_gets_no_answer_and_no_error() -> None:
    calls: list[str] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        calls.append("called")
        start_response("200 OK", [])
        return [b""]

    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(BufferedWsgiBridge(app)(_scope("/", method="POST"), receive, send))
    assert calls == [] and sent == []


@pytest.mark.django_db(transaction=True)
def test_a_portal_page_costs_one_switch_to_the_worker_thread(portal: Portal,  # noqa: F811
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    client = Client()
    client.force_login(portal.reviewer)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    switches: list[str] = []
    for name in ("SyncToAsync", "AsyncToSync"):
        adapter = getattr(sync, name)
        original = adapter.__call__

        def counted(self: Any, *args: Any, _original: Any = original, _name: str = name,
                    **kwargs: Any) -> Any:
            switches.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(adapter, "__call__", counted)

    sent = _call(_portal_application(), _scope("/t/acme/board/", headers=[(b"cookie", cookie)]),
                 [b""])

    assert sent[0]["status"] == 200
    assert b"Acme" in sent[1]["body"]
    assert switches == ["SyncToAsync"]


def test_the_access_log_has_one_line_per_request_when_asked(caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    caplog.set_level("INFO", logger="autocoder.access")
    _call(BufferedWsgiBridge(_echo, log_access=True),
          _scope("/upload/", method="POST", query=b"page=2"), [b"abc"])
    _call(BufferedWsgiBridge(_echo), _scope("/quiet/"), [b""])

    lines = [r.getMessage() for r in caplog.records if r.name == "autocoder.access"]
    assert len(lines) == 1
    assert lines[0].startswith('127.0.0.1 "POST /upload/?page=2" 201 ')


def _rendezvous(paths: list[str]) -> list[str]:
    """Send one request per path at once through a bridge whose WSGI app waits at a barrier
    for all of them: what each answered ("met" only if they all ran at the same time)."""
    import threading

    barrier = threading.Barrier(len(paths), timeout=5)

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        try:
            barrier.wait()
            said = b"met"
        except threading.BrokenBarrierError:
            said = b"alone"
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [said]

    bridge = BufferedWsgiBridge(app)

    async def one(path: str) -> str:
        sent: list[Message] = []
        incoming = [{"type": "http.request", "body": b"{}", "more_body": False}]

        async def receive() -> Message:
            return incoming.pop(0) if incoming else {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            sent.append(message)

        await bridge(_scope(path, method="POST"), receive, send)
        return bytes(sent[-1]["body"]).decode()

    async def every() -> list[str]:
        return list(await asyncio.gather(*(one(path) for path in paths)))

    return asyncio.run(every())


def test_tool_api_calls_run_several_at_once_in_one_process() -> None:
    # A tool's call mostly waits for its sandbox: three at once meet, where pages would queue
    assert _rendezvous(["/api/tools/acme/echo/echo"] * 3) == ["met"] * 3


@pytest.mark.parametrize(("version", "connection", "kept_alive"), [
    ("1.1", None, True), ("1.1", b"close", False), ("1.1", b"Upgrade, Close", False),
    ("1.0", None, False), ("1.0", b"keep-alive", True)])
def test_the_shares_are_told_whether_the_client_keeps_its_connection(
        version: str, connection: bytes | None, kept_alive: bool) -> None:
    # A connection the client closes after its answer holds no share of the web processes'
    # kept-alive connections (autocoder/connection_shares.py).
    told: list[bool] = []

    class Shares:
        def should_close(self, client: tuple[str, int], *, kept_alive: bool = True) -> bool:
            told.append(kept_alive)
            return False

    scope = _scope("/", headers=[(b"connection", connection)] if connection else [])
    scope["http_version"] = version
    sent = _call(BufferedWsgiBridge(_echo, shares=Shares()), scope, [b""])  # type: ignore[arg-type]
    assert told == [kept_alive]
    assert (b"connection", b"close") not in sent[0]["headers"]
