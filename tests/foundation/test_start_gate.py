"""The start gate (autocoder/start_gate.py): processes that `up` starts during its migrations
load their code, then wait; nothing is served or taken from the queue before the gate opens.

Real processes: the ASGI application module as daphne imports it, and a Dramatiq worker as
`up` starts one (`manage.py rundramatiq`) on the session's PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TypeVar

import pytest
from django.conf import settings

from autocoder import heartbeat
from autocoder.start_gate import OWNER_ENVIRONMENT, gate_environment, gate_open, gate_waiting
from tests.live import child_env, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db]
WAITING = "waiting at the start gate"
T = TypeVar("T")


def _output(log: IO[str]) -> str:
    log.seek(0)
    return log.read()


def _wait_for(check: Callable[[], T | None], timeout_s: float, what: str, log: IO[str]) -> T:
    return wait_for(check, timeout_s, what, lambda: _output(log)[-3000:])


def _start(command: list[str], gate: Path, log: IO[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(command, cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            env=child_env(**gate_environment(gate), **env))


def _kill(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)


APPLICATION = [sys.executable, "-c", "import config.asgi; print('application loaded')"]


def test_the_web_application_loads_then_waits_for_the_gate(tmp_path: Path) -> None:
    gate = tmp_path / "run" / "start-gate"
    with tempfile.TemporaryFile("w+") as log:
        process = _start(APPLICATION, gate, log)
        try:
            _wait_for(lambda: WAITING in _output(log), 120, "the application did not wait", log)
            time.sleep(0.5)
            assert process.poll() is None
            assert "application loaded" not in _output(log)
            gate_open(gate)
            assert process.wait(30) == 0
            assert "application loaded" in _output(log)
        finally:
            _kill(process)


def test_sigterm_ends_the_wait_at_once(tmp_path: Path) -> None:
    with tempfile.TemporaryFile("w+") as log:
        process = _start(APPLICATION, tmp_path / "start-gate", log)
        try:
            _wait_for(lambda: WAITING in _output(log), 120, "the application did not wait", log)
            started = time.monotonic()
            process.send_signal(signal.SIGTERM)
            assert process.wait(10) == 0
            assert time.monotonic() - started < 3, "SIGTERM did not end the wait at once"
            assert "application loaded" not in _output(log)
        finally:
            _kill(process)


def test_a_worker_boots_only_once_the_gate_opens(tmp_path: Path) -> None:
    """No heartbeat (so no claim, no sweep, no message taken) while the gate is shut. Dramatiq
    passes a worker's log on only once the worker has booted, so the line saying it waited is
    read at the end; the gate stays shut until the worker's process is marked waiting."""
    gate = tmp_path / "start-gate"
    before = heartbeat.live_worker_ids()
    worker = [sys.executable, "manage.py", "rundramatiq", "--processes", "1", "--threads", "1"]
    with tempfile.TemporaryFile("w+") as log:
        process = _start(worker, gate, log, WORKER_HEARTBEAT_INTERVAL_S="1",
                         WORKER_HEARTBEAT_TTL_S="3")
        try:
            # Shut for 3 s at least, and until the worker's process is seen waiting (on a
            # busy machine its boot takes longer than any fixed time).
            shut_for = time.monotonic() + 3
            deadline = time.monotonic() + 120
            while time.monotonic() < shut_for or not gate_waiting(gate):
                assert time.monotonic() < deadline, "the worker never reached the gate"
                assert heartbeat.live_worker_ids() - before == set(), _output(log)[-3000:]
                assert process.poll() is None, _output(log)[-3000:]
                time.sleep(0.2)
            time.sleep(1)  # still no heartbeat while it waits
            assert heartbeat.live_worker_ids() - before == set(), _output(log)[-3000:]
            gate_open(gate)
            _wait_for(lambda: heartbeat.live_worker_ids() - before, 60,
                      "the worker did not beat after the gate opened", log)
            _wait_for(lambda: "ready for action" in _output(log), 30, "no boot line", log)
            assert WAITING in _output(log)
        finally:
            _kill(process)


def test_a_child_whose_up_is_gone_stops_waiting(tmp_path: Path) -> None:
    """An `up` killed before it opened the gate leaves no process waiting for ever."""
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(
            APPLICATION, cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
            env=child_env(**{**gate_environment(tmp_path / "start-gate"),
                             OWNER_ENVIRONMENT: str(owner.pid)}))
        try:
            _wait_for(lambda: WAITING in _output(log), 120, "the application did not wait", log)
            owner.kill()
            owner.wait(10)
            assert process.wait(10) != 0
            assert f"(pid {owner.pid}) is gone" in _output(log)
        finally:
            _kill(process)
            owner.kill()
