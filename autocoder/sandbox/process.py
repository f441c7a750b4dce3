"""Supervision of one sandboxed process tree: output caps, wall clock, cancellation, verdict."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autocoder.sandbox.output import CappedStream
from autocoder.sandbox.types import Limits

CancelCheck = Callable[[], bool]

POLL_S = 0.1  # cancel_check and the clock are looked at this often
USAGE_POLL_S = 0.5
MEMORY_POLL_S = 0.1  # the job's total memory (memory.py) is looked at this often
DRAIN_GRACE_S = 5.0
KILL_GRACE_S = 2.0  # how long a killed job's supervised process gets to reap its children


@dataclass
class Supervised:
    returncode: int
    stdout: CappedStream
    stderr: CappedStream
    stop: str | None  # why we killed it: timeout | cancelled | output_limit | workdir_full
    #                   | memory_limit
    duration_ms: int


def spawn(argv: Sequence[str], *, env: dict[str, str], stdin: int = subprocess.DEVNULL,
          popen_kwargs: dict[str, Any] | None = None) -> subprocess.Popen[bytes]:
    """Start argv in a process group of its own, its output on pipes."""
    return subprocess.Popen(
        list(argv), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, process_group=0, close_fds=True, **(popen_kwargs or {}),
    )


def watch(
    proc: subprocess.Popen[bytes], *, limits: Limits, started: float,
    cancel_check: Callable[[], bool] | None = None,
    over_quota: Callable[[], bool] | None = None,
    memory_exceeded: Callable[[], bool] | None = None,
) -> Supervised:
    """Supervise a started process group until it ends or must be stopped.

    Stopping it kills the children of the supervised process (bwrap's init: the kernel then
    kills everything left in the sandbox's pid namespace), then its process group (see
    `_stop`). `memory_exceeded` is the job's total-memory bound (memory.JobBound.exceeded),
    polled every MEMORY_POLL_S.
    """
    cap = limits.output_kb * 1024
    streams = {"stdout": CappedStream(cap), "stderr": CappedStream(cap)}
    stop = None
    try:
        stop = _pump(proc, streams, started + limits.timeout_s, cancel_check, over_quota,
                     memory_exceeded)
    finally:
        if stop is not None or proc.poll() is None:
            _stop(proc)
        _drain_rest(proc, streams)
        proc.wait()
    return Supervised(proc.returncode, streams["stdout"], streams["stderr"], stop,
                      int((time.monotonic() - started) * 1000))


def _pump(
    proc: subprocess.Popen[bytes], streams: dict[str, CappedStream], deadline: float,
    cancel_check: Callable[[], bool] | None, over_quota: Callable[[], bool] | None,
    memory_exceeded: Callable[[], bool] | None = None,
) -> str | None:
    selector = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    selector.register(proc.stdout, selectors.EVENT_READ, streams["stdout"])
    selector.register(proc.stderr, selectors.EVENT_READ, streams["stderr"])
    next_usage_check = time.monotonic() + USAGE_POLL_S
    next_memory_check = time.monotonic()
    try:
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                return "timeout"
            if cancel_check is not None and cancel_check():
                return "cancelled"
            if over_quota is not None and now >= next_usage_check:
                next_usage_check = now + USAGE_POLL_S
                if over_quota():
                    return "workdir_full"
            if memory_exceeded is not None and now >= next_memory_check:
                next_memory_check = now + MEMORY_POLL_S
                if memory_exceeded():
                    return "memory_limit"
            for key, _events in selector.select(timeout=min(POLL_S, max(0.0, deadline - now))):
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                key.data.feed(data)
                if key.data.flooding:
                    return "output_limit"
        while True:  # both pipes closed: the job is finishing; the clock still applies
            remaining = deadline - time.monotonic()
            try:
                proc.wait(timeout=max(0.0, min(remaining, MEMORY_POLL_S)))
                return None
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    return "timeout"
            if memory_exceeded is not None and memory_exceeded():
                return "memory_limit"
    finally:
        selector.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill a job: the supervised process's children first, then its process group.

    The children go first so that the supervised process (bwrap) reaps them and exits by
    itself. Killed first, it would leave its child, the sandbox's init, to the host's init
    as a zombie, and until the host's init reaps it (some reap slowly) that zombie counts
    toward RLIMIT_NPROC of the next jobs in the same user namespace.
    """
    for child in children(proc.pid):
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(proc.pid)


def children(pid: int) -> list[int]:
    """The direct children of `pid` (from /proc/<pid>/task/<tid>/children); [] once it is gone."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as handle:
                found.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return found


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _drain_rest(proc: subprocess.Popen[bytes], streams: dict[str, CappedStream]) -> None:
    """Read what is left in the pipes; never wait on them for long once the job is killed."""
    deadline = time.monotonic() + DRAIN_GRACE_S
    for name in ("stdout", "stderr"):
        pipe = getattr(proc, name)
        if pipe is None or pipe.closed:
            continue
        os.set_blocking(pipe.fileno(), False)
        while time.monotonic() < deadline:
            try:
                data = os.read(pipe.fileno(), 65536)
            except BlockingIOError:
                if proc.poll() is not None:
                    break
                time.sleep(0.01)
                continue
            if not data:
                break
            if not streams[name].flooding:
                streams[name].feed(data)
        pipe.close()


MEMORY_MARKERS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")


def verdict(*, returncode: int, stop: str | None, stderr: str,
            memory_exceeded: bool = False) -> tuple[int | None, bool, bool, str | None]:
    """(exit_code, timed_out, oom, killed_reason) from how a job ended.

    `stop` is the supervisor's own reason for killing it; `memory_exceeded` says that the
    job's total-memory bound was hit although the job ended by itself (the kernel's OOM
    killer ended one of its processes, and the job then exited). Otherwise the reason is
    read from the exit status (128 + signal, as bwrap and the docker entry report it) and,
    for limits that surface as errors inside the job, from the end of its stderr.
    """
    if stop is not None:
        return None, stop == "timeout", stop == "memory_limit", stop
    if memory_exceeded:
        return returncode, False, True, "memory_limit"
    if returncode < 0:  # the supervised process itself died of a signal
        return returncode, False, False, f"signal:{_signal_name(-returncode)}"
    tail = stderr[-4000:]
    if returncode != 0 and any(marker in tail for marker in MEMORY_MARKERS):
        return returncode, False, True, "memory_limit"
    if returncode > 128 and _signal_name(returncode - 128):
        return returncode, False, False, _signal_reason(returncode - 128)
    if returncode != 0 and "No space left on device" in tail:
        return returncode, False, False, "workdir_full"
    if returncode != 0 and "File too large" in tail:
        return returncode, False, False, "file_size_limit"
    return returncode, False, False, None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return ""


def _signal_reason(number: int) -> str:
    if number == signal.SIGXCPU:
        return "cpu_limit"
    if number == signal.SIGXFSZ:
        return "file_size_limit"
    return f"signal:{_signal_name(number)}"


def tree_over_quota(path: Path, budget: int) -> Callable[[], bool]:
    from autocoder.sandbox.workdir import usage_exceeds

    return lambda: usage_exceeds(path, budget)
