"""A live ASGI server (daphne in a subprocess) on the test database, for websocket/browser tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.db import connection

T = TypeVar("T")


def wait_for(what: Callable[[], T | None], timeout_s: float, message: str,
             output: Callable[[], str] | None = None) -> T:
    """`what()` once it is truthy, polled for up to `timeout_s`; else fail with `message` and
    what `output()` says (a child process's log)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(message + (f"\n{output()}" if output else ""))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def database_url_for(name: str) -> str:
    """The session's DATABASE_URL pointing at database `name` (the test database)."""
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit(parts._replace(path=f"/{name}"))


def child_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["DATABASE_URL"] = database_url_for(connection.settings_dict["NAME"])
    env.update(extra)
    return env


@dataclass(frozen=True)
class LiveServer:
    url: str
    ws_url: str
    process: subprocess.Popen[bytes]


def _wait_for_http(url: str, process: subprocess.Popen[bytes], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"live server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{url}login/", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"live server at {url} did not answer in {timeout_s}s")


@contextmanager
def live_asgi_server() -> Iterator[LiveServer]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
         "config.asgi:application"],
        cwd=settings.BASE_DIR, env=child_env(), start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_for_http(url, process)
        yield LiveServer(url=url, ws_url=f"ws://127.0.0.1:{port}/", process=process)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def logged_in_browser(user: object, server_url: str) -> urllib.request.OpenerDirector:
    """A client of the live portal that sends `user`'s session cookie, as a browser would
    after logging in (the session is made by Django's test client on the same database)."""
    import http.cookiejar

    from django.test import Client

    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    jar = http.cookiejar.CookieJar()
    host = urlsplit(server_url).hostname or ""
    jar.set_cookie(http.cookiejar.Cookie(
        0, "sessionid", client.cookies["sessionid"].value, None, False, host, False, False,
        "/", True, False, None, True, None, None, {}))
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))


def post_form(browser: urllib.request.OpenerDirector, url: str,
              fields: dict[str, str]) -> str:
    """GET the page at `url`, then POST `fields` with its CSRF token, as its form would; the
    answer's HTML."""
    import re
    from urllib.parse import urlencode

    form = browser.open(url, timeout=30).read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert csrf, form
    body = urlencode({**fields, "csrfmiddlewaretoken": csrf.group(1)}).encode()
    request = urllib.request.Request(url, data=body, headers={"Referer": url})
    return str(browser.open(request, timeout=30).read().decode())


def shown_command(page: str, element_id: str) -> str:
    """The text of the page's <pre id=...> (a command to copy), as a person copies it."""
    import html
    import re

    found = re.search(rf'<pre[^>]*id="{element_id}"[^>]*>(.*?)</pre>', page, re.S)
    assert found, page
    return html.unescape(found.group(1))
