"""A killed worker process: `up` starts a replacement within seconds, the web server keeps
answering, and the step the dead worker held is taken over by the watchdog within 60 s (the
claim on the run names a worker whose heartbeat expired), not by the 900 s stall watchdog.

The slow test runs the real stack (`manage.py up` on the session's PostgreSQL and Redis) and
kills a worker with SIGKILL while it runs a sandbox job that sleeps.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psutil
import pytest
from django.conf import settings

from autocoder import heartbeat
from runs.models import Run
from runs.services import outbox, resending, stepping
from tests.engine.conftest import DispatchRecorder, load_script
from tests.live import child_env, free_port, wait_for

SLEEP_S = 15


def test_the_step_of_a_dead_worker_is_sent_again_once(start_run: Callable[..., Run]) -> None:
    dead, alive = start_run("success"), start_run("success")
    Run.objects.filter(id=dead.id).update(status=Run.Status.RUNNING, claimed_by="h:1")
    Run.objects.filter(id=alive.id).update(status=Run.Status.RUNNING, claimed_by="h:2")
    dispatch = DispatchRecorder()

    assert resending.runs_orphaned_kick(live={"h:2"}, dispatch=dispatch) == [dead.id]
    assert dispatch.sent == [(dead.id, dead.step_token, 0)]
    assert Run.objects.get(id=dead.id).claimed_by == ""
    # The claim is cleared: the next sweeps leave the run to whoever takes the message.
    assert resending.runs_orphaned_kick(live={"h:2"}, dispatch=dispatch) == []


def test_a_claim_names_the_worker_only_inside_a_beating_worker(
        start_run: Callable[..., Run]) -> None:
    """`generate` drives steps in its own process, which has no heartbeat: its claims are
    empty, so a worker's watchdog never takes its steps away."""
    run = start_run("success")
    assert stepping._claim(run.id, run.step_token).claimed_by == ""
    dispatch = DispatchRecorder()
    assert resending.runs_orphaned_kick(live=set(), dispatch=dispatch) == []


def slow_script() -> dict[str, list[str]]:
    script = load_script("success")
    script["tester"] = [
        "```python path=tests/test_generated_takes_a_while.py\nimport time\n\n\n"
        f"def test_takes_a_while():\n    time.sleep({SLEEP_S})\n    assert True\n```\n"]
    return script


class Stack:
    """`manage.py up` in a subprocess; its output is read all along (a full pipe would block
    the servers writing their logs)."""

    def __init__(self, port: int) -> None:
        self.base = f"http://127.0.0.1:{port}/"
        self.process = start_stack(port)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def said(self, *words: str) -> list[str]:
        return [line.strip() for line in self.lines if any(word in line for word in words)]


def start_stack(port: int) -> subprocess.Popen[str]:
    env = child_env(ENGINE_STALL_S="900", WORKER_HEARTBEAT_INTERVAL_S="5",
                    WORKER_HEARTBEAT_TTL_S="20")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "up", "--port", str(port), "--workers", "2",
         "--threads", "1"],
        cwd=settings.BASE_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True)
    assert process.stdout is not None
    deadline, lines = time.monotonic() + 180, []
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        lines.append(line)
        if "Press Ctrl-C to stop everything." in line:
            return process
    process.kill()
    raise AssertionError("up did not become ready:\n" + "".join(lines[-40:]))


@pytest.fixture
def stack(clean_redis: Any) -> Iterator[Stack]:
    stack = Stack(free_port())
    try:
        yield stack
    finally:
        stack.process.send_signal(signal.SIGTERM)
        try:
            stack.process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(stack.process.pid, signal.SIGKILL)



def claimed_sandbox() -> Run | None:
    run = Run.objects.filter(phase=Run.Phase.SANDBOX).exclude(claimed_by="").first()
    return run


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)  # the stack's processes commit on their own
def test_a_killed_worker_is_restarted_and_its_step_taken_over(
        start_run: Callable[..., Run], stack: Stack) -> None:
    up, base = stack.process, stack.base
    web_pids = _web_pids(up)
    run = start_run(slow_script(), dispatch=outbox.enqueue_step)

    holder = wait_for(claimed_sandbox, 120, "no worker took the sandbox step").claimed_by
    time.sleep(2)  # the sleeping test job is running now
    assert Run.objects.filter(id=run.id, phase=Run.Phase.SANDBOX, claimed_by=holder).exists()
    before = heartbeat.live_worker_ids()
    victim = int(holder.rsplit(":", 1)[1])
    assert psutil.Process(victim) in psutil.Process(up.pid).children(recursive=True)
    os.kill(victim, signal.SIGKILL)
    killed_at = time.monotonic()

    new = wait_for(lambda: heartbeat.live_worker_ids() - before, 30, "no replacement worker")
    restarted_s = time.monotonic() - killed_at
    assert httpx.get(f"{base}healthz", timeout=10).status_code == 200
    assert _web_pids(up) == web_pids, "the web server went down with the worker"

    taker = wait_for(lambda: Run.objects.filter(id=run.id, phase=Run.Phase.SANDBOX).exclude(
        claimed_by__in=("", holder)).values_list("claimed_by", flat=True).first(),
        60, "the sandbox step was not taken over within 60 s")
    taken_over_s = time.monotonic() - killed_at
    final = wait_for(lambda: (r := Run.objects.get(id=run.id)).is_terminal and r, 120,
                     "the run did not finish")
    print("\n".join(stack.said("died holding", "exited", "started again", "unexpectedly")))
    print(json.dumps({"replacement_worker_s": round(restarted_s, 1), "replacement": sorted(new),
                      "step_taken_over_s": round(taken_over_s, 1), "by": taker}))
    assert final.status == Run.Status.SUCCEEDED, final.error
    assert restarted_s < 30 and taken_over_s < 60
    assert final.iterations.count() == 1  # the killed step was redone, nothing else
    _stops_in_time_and_unmounts_the_prepared_sandboxes(stack)


def _stops_in_time_and_unmounts_the_prepared_sandboxes(stack: Stack) -> None:
    """SIGTERM stops everything within 10 s, and the workers tear down the sandbox each keeps
    prepared for its next job (as root its workdir is a tmpfs mount)."""
    workers = {int(worker.rsplit(":", 1)[1]) for worker in heartbeat.live_worker_ids()}
    prepared = [line for line in _mounts() if any(f"/run-{pid}-" in line for pid in workers)]
    started = time.monotonic()
    stack.process.send_signal(signal.SIGTERM)
    stack.process.wait(15)
    stopped_s = time.monotonic() - started
    print(json.dumps({"stopped_s": round(stopped_s, 1), "prepared_mounts": len(prepared)}))
    assert stack.process.returncode == 0 and stopped_s < 10
    if not prepared:
        print("no tmpfs workdir was prepared (not root: workdirs are plain directories)")
    assert [line for line in _mounts() if line in prepared] == []


def _mounts() -> list[str]:
    with open("/proc/self/mounts") as mounts:
        return mounts.read().splitlines()


def _web_pids(up: subprocess.Popen[str]) -> set[int]:
    pids = {child.pid for child in psutil.Process(up.pid).children()
            if "daphne" in " ".join(child.cmdline())}
    assert pids, "no web server under up"
    return pids


def test_a_stopping_worker_unmounts_the_sandbox_it_kept_prepared() -> None:
    """A worker process ends with os._exit (no atexit hooks): the middleware's shutdown hook is
    what removes its prepared sandbox and, as root, unmounts the tmpfs workdir."""
    from autocoder.sandbox import bwrap, standby
    from autocoder.sandbox.types import Limits

    standby.prepare(Limits(), bwrap.new_standby)
    prepared = standby.prepared()
    assert prepared is not None
    workdir = str(prepared.workdir.path)
    mounted = any(f" {workdir} " in line for line in _mounts())
    print(f"prepared workdir {workdir} mounted: {mounted}")
    if not mounted:
        print("the workdir is a plain directory here (not root); checking its removal only")

    standby.ReleaseOnShutdown().after_worker_shutdown(None, None)  # type: ignore[arg-type]
    assert not any(f" {workdir} " in line for line in _mounts())
    assert not os.path.exists(workdir) and prepared.proc.poll() is not None
