"""Prepared sandboxes: the next run's sandbox is set up while the worker does something else.

Setting up a bwrap sandbox (namespaces, mounts, a size-capped workdir, an interpreter that
waits for the job) costs several milliseconds, more than the job `python -c pass` itself.
A generation loop runs its sandbox jobs seconds or minutes apart (an LLM call sits between
them), so each worker thread keeps one sandbox ready for its next run:

* each prepared sandbox serves exactly one job, then is torn down like any other run: fresh
  namespaces, fresh workdir and /tmp every time, nothing shared between jobs;
* the job's limits are applied by the launcher just before it becomes the job, so one
  prepared sandbox fits any limits with the same workdir size;
* a prepared sandbox that died or does not fit is discarded and a fresh one is built on the
  spot (the cold path, which a worker's first run also takes);
* it belongs to the thread that started it: bwrap is killed when that thread ends
  (--die-with-parent), and its workdir is unmounted when the thread's reference goes.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable

import dramatiq
from dramatiq.middleware import Middleware

import autocoder.sandbox.launcher as launcher
from autocoder.sandbox.types import Limits, SandboxError
from autocoder.sandbox.workdir import Workdir

READY_TIMEOUT_S = 15.0
Starter = Callable[[Workdir], "subprocess.Popen[bytes]"]

_local = threading.local()
_every: weakref.WeakSet[Standby] = weakref.WeakSet()


class Standby:
    """One sandbox whose launcher waits for a job; used once, then released."""

    def __init__(self, workdir: Workdir, start: Starter) -> None:
        self.workdir = workdir
        self.owner_pid = os.getpid()
        workdir.__enter__()
        try:
            self.proc = start(workdir)
        except BaseException:
            workdir.cleanup()
            raise
        self._ready = False
        self.handed_over = False  # from then on its processes are a job's, not a standby's
        self._release = weakref.finalize(self, _release, self.proc, workdir, self.owner_pid)
        _every.add(self)

    def fits(self, limits: Limits) -> bool:
        return (self.workdir.size_mb == limits.workdir_mb and self.owner_pid == os.getpid()
                and self.proc.poll() is None)

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until the launcher is waiting; SandboxError (with bwrap's reason) if it died."""
        if self._ready:
            return
        assert self.proc.stdout is not None
        fd, deadline, seen = self.proc.stdout.fileno(), time.monotonic() + timeout_s, b""
        while len(seen) < len(launcher.READY_MARKER):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise SandboxError("the bwrap sandbox did not become ready in time")
            chunk = os.read(fd, len(launcher.READY_MARKER) - len(seen))
            if not chunk:
                raise SandboxError(f"the bwrap sandbox could not start: {self._reason()}")
            seen += chunk
        if seen != launcher.READY_MARKER:
            raise SandboxError("the bwrap sandbox sent an unexpected greeting")
        self._ready = True

    def hand_over(self, message: bytes) -> subprocess.Popen[bytes]:
        """Give the waiting launcher its job; from here on the process is the job's."""
        assert self.proc.stdin is not None
        self.handed_over = True
        try:
            self.proc.stdin.write(message)
            self.proc.stdin.close()
        except BrokenPipeError as exc:
            raise SandboxError(f"the bwrap sandbox went away: {self._reason()}") from exc
        return self.proc

    def release(self) -> None:
        """Kill whatever still runs in it and remove its workdir (idempotent)."""
        self._release()

    def _reason(self) -> str:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        assert self.proc.stderr is not None
        os.set_blocking(self.proc.stderr.fileno(), False)
        try:  # everything in the sandbox is dead: what bwrap said is in the pipe already
            said = os.read(self.proc.stderr.fileno(), 4096)
        except BlockingIOError:
            said = b""
        lines = said.decode(errors="replace").strip().splitlines()
        return lines[0] if lines else f"exit status {self.proc.returncode}"


def _release(proc: subprocess.Popen[bytes], workdir: Workdir, owner_pid: int) -> None:
    if os.getpid() != owner_pid:  # a forked copy: the sandbox is the parent's to remove
        return
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None and not pipe.closed:
            pipe.close()
    workdir.cleanup()


def take(limits: Limits, build: Callable[[int], Standby]) -> Standby:
    """This thread's prepared sandbox when it fits `limits`, else a fresh one (cold path)."""
    prepared: Standby | None = getattr(_local, "standby", None)
    _local.standby = None
    if prepared is not None:
        if prepared.fits(limits):
            return prepared
        prepared.release()
    return build(limits.workdir_mb)


def prepare(limits: Limits, build: Callable[[int], Standby]) -> None:
    """Start setting up this thread's next sandbox; returns before it is ready."""
    if getattr(_local, "standby", None) is None:
        _local.standby = build(limits.workdir_mb)


def prepared() -> Standby | None:
    return getattr(_local, "standby", None)


def every_prepared() -> list[Standby]:
    """The sandboxes of every thread of this process that are alive and still wait for a job."""
    return [prepared for prepared in list(_every)
            if not prepared.handed_over and prepared.proc.poll() is None]


def release_all() -> None:
    """Tear down every prepared sandbox of this process (tests, shutdown)."""
    _local.standby = None
    for standby in list(_every):
        standby.release()


class ReleaseOnShutdown(Middleware):
    """Dramatiq middleware: a stopping worker tears down its prepared sandboxes. A worker
    process exits without running atexit hooks (multiprocessing ends it with os._exit), so
    without this their tmpfs workdirs would stay mounted after a clean stop."""

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        release_all()
