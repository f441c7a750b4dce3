"""The web server's sockets (autocoder/supervisor.py): one per ASGI process on the same port."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from autocoder.supervisor import listening_sockets, web_children, web_process_count
from tests.live import free_port


def test_every_web_process_gets_its_own_socket_on_the_one_port() -> None:
    port = free_port()
    sockets = listening_sockets("127.0.0.1", port, 3)
    try:
        assert {sock.getsockname() for sock in sockets} == {("127.0.0.1", port)}
        children = web_children(sockets)
        assert [child.pass_fds for child in children] == [(s.fileno(),) for s in sockets]
        assert all(f"--fd {s.fileno()}" in " ".join(c.command)
                   for c, s in zip(children, sockets, strict=True))
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the kernel accepts into one of the sockets' backlogs
    finally:
        for sock in sockets:
            sock.close()


def test_a_port_in_use_says_so_plainly() -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(OSError, match=r"cannot listen on 127\.0\.0\.1:\d+: .*--port"):
            listening_sockets("127.0.0.1", taken.getsockname()[1], 2)
    finally:
        taken.close()


def test_an_ipv6_address_is_refused_with_what_to_do() -> None:
    with pytest.raises(OSError, match="give an IPv4 address"):
        listening_sockets("::1", free_port(), 2)


def test_one_process_per_core_plus_one_unless_set(settings: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    settings.WEB_PROCESSES = 0
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert web_process_count() == 3
    monkeypatch.setattr("os.cpu_count", lambda: None)
    assert web_process_count() == 2
    settings.WEB_PROCESSES = 5
    assert web_process_count() == 5
