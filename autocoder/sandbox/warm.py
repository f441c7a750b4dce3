"""Warm sandboxes: a bwrap sandbox kept per (team, plugin version), a fresh fork per call.

Starting a sandbox and importing a plugin is most of a call's cost. A warm sandbox is set up
exactly as a per-call one (bwrap.bwrap_argv, the launcher's hard limits, the job's memory
bound, a user namespace and a size-capped workdir of its own, no network), then runs
zygote.py, which imports the runner and the plugin once and forks a fresh child per call.
The child is what a per-call sandbox's job is: the call's own limits, the call's input in
.autocoder/call.json, its answer in .autocoder/result.json, api.http over the call's channel.

* Never shared between teams: the pool's key is (team, version) and the fingerprint of the
  files, the runtime and the limits; a sandbox serves one call at a time.
* Clean per call: the zygote kills what a call left running and puts /workdir, /tmp and
  /dev/shm back as they were after the import (zygote.py); memory is the child's own copy.
* Recycled after SANDBOX_WARM_CALLS calls and SANDBOX_WARM_IDLE_S seconds unused, at most
  SANDBOX_WARM_MAX per process (the least recently used idle one makes room). A sandbox whose
  call timed out, ran out of memory, flooded its output or lost its zygote is killed.
* `retire(team_id=..., version_id=...)` kills the matching sandboxes at once; in every
  process, a reaper thread also asks `wanted` (set by the tools app: which keys may still be
  warm) every RETIRE_CHECK_S, so a kill switch thrown in another process retires them too.

`run` answers None when no warm sandbox can take the call (another backend, a full pool, a
plugin that starts threads at import): the caller then runs it in a sandbox of its own.
docs/sandbox.md, "Warm sandboxes".
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import select
import socket
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import autocoder.sandbox.bwrap as bwrap
import autocoder.sandbox.memory as memory
import autocoder.sandbox.process as process
import autocoder.sandbox.standby as standby
import autocoder.sandbox.zygote as zygote
from autocoder.sandbox.channel import BWRAP_DIR, Channel
from autocoder.sandbox.output import CappedStream
from autocoder.sandbox.types import Limits, RunResult, SandboxError
from autocoder.sandbox.userns import HOST_ENV, SANDBOX_UID, UserNamespace, drop_to_sandbox_uid
from autocoder.sandbox.workdir import Workdir

logger = logging.getLogger(__name__)

ZYGOTE_PATH = ".autocoder/zygote.py"
ZYGOTE_SOURCE = Path(zygote.__file__).read_text(encoding="utf-8")
ZYGOTE_CPU_S = 3600  # the zygote's own processor time over its life; each call has its own
RETIRE_CHECK_S = 1.0
DEFAULTS = {"SANDBOX_WARM": True, "SANDBOX_WARM_MAX": 6, "SANDBOX_WARM_CALLS": 500,
            "SANDBOX_WARM_IDLE_S": 120.0}
_MB = 1024 * 1024


@dataclass(frozen=True)
class WarmKey:
    """Whose warm sandbox a call may use: one team's calls of one plugin version."""

    team_id: int
    version_id: int


@dataclass(frozen=True)
class WarmSettings:
    enabled: bool
    max_sandboxes: int  # per process
    max_calls: int  # calls one warm sandbox serves before it is replaced
    idle_s: float  # unused this long: stopped


def configured() -> WarmSettings:
    """The SANDBOX_WARM* settings (Django settings, else the environment, else DEFAULTS)."""
    from django.conf import settings

    def read(name: str) -> Any:
        if settings.configured and hasattr(settings, name):
            return getattr(settings, name)
        return os.environ.get(name, DEFAULTS[name])

    enabled = read("SANDBOX_WARM")
    if isinstance(enabled, str):
        enabled = enabled.strip().lower() not in ("0", "false", "no", "off", "")
    try:
        return WarmSettings(enabled=bool(enabled),
                            max_sandboxes=max(0, int(read("SANDBOX_WARM_MAX"))),
                            max_calls=max(1, int(read("SANDBOX_WARM_CALLS"))),
                            idle_s=max(1.0, float(read("SANDBOX_WARM_IDLE_S"))))
    except (TypeError, ValueError) as exc:
        raise SandboxError(f"a SANDBOX_WARM_* setting is not a number: {exc}") from None


class NotWarmable(SandboxError):
    """This plugin cannot be kept warm (it starts threads at import, say): run it cold."""


def _limit_values(limits: Limits) -> list[int]:
    # as bwrap.job_message's, one more process: the zygote itself is one of the job's
    return [limits.memory_mb * _MB, limits.pids + 1, limits.cpu_s, limits.cpu_s + 1,
            limits.file_size_mb * _MB, limits.open_files]


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


class WarmSandbox:
    """One sandbox running the zygote of one plugin version for one team."""

    def __init__(self, key: WarmKey, fingerprint: str, files: Mapping[str, str | bytes], *,
                 entry: str, site: str, runner: str, limits: Limits) -> None:
        self.key, self.fingerprint, self.limits = key, fingerprint, limits
        self.calls = 0
        self.last_used = time.monotonic()
        self.retired = False
        self.pid = 0
        self._namespace = UserNamespace()  # of its own: process counts are not shared
        self._host, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._buffer = b""
        self._bound: memory.JobBound | None = None
        self._sandbox: standby.Standby | None = None
        try:
            self._start(inside, files, limits)
            self._greet(entry=entry, site=site, runner=runner)
        except BaseException:
            self.close()
            raise
        finally:
            inside.close()

    # -- start ------------------------------------------------------------------------------

    def _start(self, inside: socket.socket, files: Mapping[str, str | bytes],
               limits: Limits) -> None:
        layout = bwrap.host_layout()
        workdir = Workdir(size_mb=limits.workdir_mb, owner=(SANDBOX_UID, SANDBOX_UID),
                          use_tmpfs=True)
        cgroup = memory.cgroup_for_sandbox()
        enter = cgroup.enter_argv() if cgroup is not None else []
        namespace, fd = self._namespace, inside.fileno()

        def start(prepared: Workdir) -> subprocess.Popen[bytes]:
            argv = bwrap.bwrap_argv(layout=layout, workdir_mb=limits.workdir_mb,
                                    workdir=str(prepared.path), userns_fd=namespace.fd)
            return process.spawn(enter + drop_to_sandbox_uid() + argv, env=HOST_ENV,
                                 stdin=subprocess.PIPE,
                                 popen_kwargs={"pass_fds": (namespace.fd, fd)})

        try:
            self._sandbox = standby.Standby(workdir, start)
            self._sandbox.wait_ready()
            workdir.write({**files, ZYGOTE_PATH: ZYGOTE_SOURCE})
            self._bound = memory.bound_job(self._sandbox.proc.pid, limits.memory_mb,
                                           prepared=cgroup)
            cgroup = None
        finally:
            if cgroup is not None:
                cgroup.remove()
        zygote_limits = dataclasses.replace(limits, cpu_s=ZYGOTE_CPU_S, pids=limits.pids + 1)
        proc = self._sandbox.hand_over(bwrap.job_message(
            ["python", "-I", "-S", "-B", ZYGOTE_PATH, str(fd)], zygote_limits, layout,
            in_process=True))
        self.pid = proc.pid
        for pipe in (proc.stdout, proc.stderr):
            assert pipe is not None
            os.set_blocking(pipe.fileno(), False)

    def _greet(self, *, entry: str, site: str, runner: str) -> None:
        start = {"runner": runner, "entry": entry, "site": site,
                 "result_max_bytes": self.limits.collect_kb * 1024}
        self._host.sendall(_frame(_json_bytes(start)))
        stderr = CappedStream(4096)
        stop, frames = self._exchange(1, time.monotonic() + self.limits.timeout_s,
                                      CappedStream(4096), stderr)
        if stop is not None or not frames:
            said = stderr.text().strip().splitlines()
            raise SandboxError(f"the warm sandbox did not start ({stop or 'no answer'}"
                               f"{': ' + said[-1] if said else ''})")
        answer = _json_loads(frames[0])
        if answer.get("problem"):
            raise SandboxError(f"the warm sandbox cannot be used: {answer['problem']}")
        if not answer.get("fork_safe"):
            raise NotWarmable("the plugin starts threads when it is imported")

    # -- a call -----------------------------------------------------------------------------

    def call(self, call_text: str, limits: Limits, channel: Channel | None) -> RunResult:
        """Run one call (the runner's call.json text) in a fresh fork; the sandbox is closed
        when the call had to be stopped (time, memory, output) or its zygote is gone."""
        assert self._sandbox is not None and self._bound is not None
        self.calls += 1
        started = time.monotonic()
        streams = CappedStream(limits.output_kb * 1024), CappedStream(limits.output_kb * 1024)
        if channel is not None:
            channel.open(self._sandbox.workdir.path / BWRAP_DIR,
                         owner=self._sandbox.workdir.owner)
        stop: str | None = "zygote_gone"
        frames: list[bytes] = []
        try:
            header = _json_bytes({"limits": _limit_values(limits)})
            try:
                self._host.sendall(_frame(header) + _frame(call_text.encode("utf-8",
                                                                            "surrogatepass")))
            except OSError:
                pass
            else:
                stop, frames = self._exchange(2, started + limits.timeout_s, *streams)
        finally:
            if channel is not None:
                channel.close()
        over_memory = stop == "memory_limit" or self._bound.exceeded()
        if stop is not None or over_memory or len(frames) < 2:
            self.close()
        status, files, omitted = 128 + 9, dict[str, bytes](), list[str]()
        if len(frames) == 2:
            done = _json_loads(frames[0])
            status = int(str(done.get("status", 1)))
            if done.get("omitted"):
                omitted = [f"{zygote.RESULT} (over the {limits.collect_kb} KB collect budget)"]
            elif frames[1]:
                files = {zygote.RESULT: frames[1]}
        outcome = process.Supervised(status, streams[0], streams[1],
                                     None if stop == "zygote_gone" else stop,
                                     int((time.monotonic() - started) * 1000))
        self.last_used = time.monotonic()
        return bwrap.run_result(outcome, files, omitted,
                                memory_limit_mb=limits.memory_mb if over_memory else None)

    def _exchange(self, count: int, deadline: float, stdout: CappedStream,
                  stderr: CappedStream) -> tuple[str | None, list[bytes]]:
        """Read `count` frames from the zygote, its output meanwhile; (why it was stopped, the
        frames). The output a call wrote is in the pipes before its answer: drained after."""
        assert self._sandbox is not None and self._bound is not None
        proc = self._sandbox.proc
        assert proc.stdout is not None and proc.stderr is not None
        pipes: dict[Any, CappedStream] = {proc.stdout.fileno(): stdout,
                                          proc.stderr.fileno(): stderr}
        frames: list[bytes] = []
        next_memory = time.monotonic()
        while len(frames) < count:
            now = time.monotonic()
            if now >= deadline:
                return "timeout", frames
            if now >= next_memory:
                next_memory = now + process.MEMORY_POLL_S
                if self._bound.exceeded():
                    return "memory_limit", frames
            ready, _, _ = select.select([self._host, *pipes], [], [],
                                        min(process.MEMORY_POLL_S, deadline - now))
            for source in ready:
                if source is self._host:
                    data = self._host.recv(1 << 20)
                    if not data:
                        return "zygote_gone", frames
                    self._buffer += data
                    frames += self._frames()
                elif self._drain(source, pipes[source]):
                    return "output_limit", frames
        for fd, stream in pipes.items():
            if self._drain(fd, stream):
                return "output_limit", frames
        return None, frames

    def _frames(self) -> list[bytes]:
        found = []
        while len(self._buffer) >= 4:
            size = int.from_bytes(self._buffer[:4], "big")
            if len(self._buffer) < 4 + size:
                break
            found.append(self._buffer[4:4 + size])
            self._buffer = self._buffer[4 + size:]
        return found

    @staticmethod
    def _drain(fd: int, stream: CappedStream) -> bool:
        """Read what the pipe holds now; True when the output floods (the call is stopped)."""
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return False
            if not data:
                return False
            stream.feed(data)
            if stream.flooding:
                return True

    # -- the end ----------------------------------------------------------------------------

    def alive(self) -> bool:
        return (self._sandbox is not None and self._sandbox.proc.poll() is None
                and self._sandbox.owner_pid == os.getpid())

    def close(self) -> None:
        """Kill everything in it, remove its workdir, memory cgroup and namespace."""
        if self._sandbox is not None:
            self._sandbox.release()
        if self._bound is not None:
            self._bound.close()
        self._host.close()
        self._namespace.close()


def _json_bytes(value: object) -> bytes:
    import json

    return json.dumps(value).encode()


def _json_loads(data: bytes) -> dict[str, object]:
    import json

    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def fingerprint(files: Mapping[str, str | bytes], *parts: object) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        content = files[name]
        data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    digest.update(repr(parts).encode())
    return digest.hexdigest()

