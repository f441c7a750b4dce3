"""Prepared containers: the Docker backend starts the next run's container ahead of it.

Creating and starting a container costs the engine about 0.4 s (runc) to 0.7 s (runsc, which
also boots gVisor's kernel), far more than a small job. As with bwrap (standby.py), each
worker thread keeps one container ready for its next run (docs/sandbox.md, "Prepared
containers"):

* it is created exactly like a cold run's container (`container_kwargs`: no network,
  read-only root, the limits, user 10001, the runtime of the settings), with the entry
  program waiting on the container's stdin, which the host holds attached (the attach
  stream also carries the container's output back, so no polling and no log reads);
* it serves exactly one job, then is removed: fresh container, workdir and /tmp every time;
  nothing is shared between jobs. The removal and the next container's preparation run in
  the background, after the job's result is handed back;
* a prepared container whose limits, image or runtime differ from the job's, or that died,
  is removed and a container is started on the spot (the cold path, which a thread's
  first run also takes);
* a thread's container is removed when the thread ends (its reference goes), and every one
  when the process ends (atexit, and `ReleaseOnShutdown` for Dramatiq workers, which exit
  without atexit). Containers left by a process that died are removed, by label, when the
  next process on this host prepares its first one.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import queue
import select
import socket
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import dramatiq
from dramatiq.middleware import Middleware

from autocoder.sandbox.types import Limits, SandboxError
from autocoder.sandbox.workdir import base_dir, pid_alive, remove_tree

READY = b"@@autocoder-ready@@\n"  # docker_entry.READY: waiting for its job
TOOK = b"@@autocoder-took@@\n"  # docker_entry.TOOK: has its job
OWNER_LABEL = "autocoder.standby"  # "<host>:<pid>" of the process that prepared it
READY_TIMEOUT_S = 30.0
POLL_S = 0.2  # how often a cancel_check is asked
STDERR_GRACE_S = 1.0  # after the frame, for the last of stderr (a separate stream)
STATE_TIMEOUT_S = 10.0
MB = 1024 * 1024

_local = threading.local()
_every: weakref.WeakSet[Prepared] = weakref.WeakSet()
_client_lock = threading.Lock()
Create = Callable[[str], dict[str, Any]]  # the keyword arguments of docker's containers.create


@dataclass
class _ProcessState:
    pid: int
    clients: dict[str | None, Any] = field(default_factory=dict)
    reaper: queue.Queue[_Parts] | None = None
    swept: set[str | None] = field(default_factory=set)


_process: list[_ProcessState] = []  # this process's, once asked for


class ContainerGone(SandboxError):
    """The container ended before it took its job: the job never ran."""


def _state() -> _ProcessState:
    """This process's client, removal queue and sweep flag (a forked child starts afresh)."""
    with _client_lock:
        if not _process or _process[0].pid != os.getpid():
            _process[:] = [_ProcessState(pid=os.getpid())]
        return _process[0]


def client() -> Any:
    """This process's docker client for the engine DOCKER_HOST names now."""
    return client_for(os.environ.get("DOCKER_HOST"))


def client_for(engine: str | None) -> Any:
    """This process's docker client for `engine` (a DOCKER_HOST value, None for the default
    socket); one per process and engine, as requests' connection pool is thread-safe."""
    from docker.client import from_env

    state = _state()
    with _client_lock:
        clients = state.clients
        if engine not in clients:
            environment = {name: value for name, value in os.environ.items()
                           if name != "DOCKER_HOST"}
            if engine is not None:
                environment["DOCKER_HOST"] = engine
            clients[engine] = from_env(environment=environment)
        return clients[engine]


def owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class _Parts:
    """What a prepared container holds on the host (kept apart for the finalizer)."""

    def __init__(self) -> None:
        self.container: Any = None
        self.sock: socket.socket | None = None
        self.channel_dir: Path | None = None
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None


class Prepared:
    """One container whose entry waits for a job; used once, then removed."""

    def __init__(self, key: tuple[Any, ...], create: Create, *, background: bool) -> None:
        """`create(channel_dir)`: the keyword arguments of `containers.create` (the entry
        waiting on stdin), for a container whose channel directory is `channel_dir`."""
        self.key = key
        self.owner_pid = os.getpid()
        self.handed_over = False
        self._ready = False
        self._rest = b""  # the attach stream read past READY
        self.parts = _Parts()
        self._release = weakref.finalize(self, _release, self.parts, self.owner_pid)
        _every.add(self)
        # the engine is the one of the key, named when this was asked for: a background
        # build must not follow DOCKER_HOST changed meanwhile
        build = _builder(self.parts, create, key[0])  # holds no reference to self
        if background:
            self.parts.thread = threading.Thread(target=build, name="sandbox-prepare",
                                                 daemon=True)
            self.parts.thread.start()
        else:
            build()

    @property
    def container(self) -> Any:
        return self.parts.container

    @property
    def channel_dir(self) -> Path:
        assert self.parts.channel_dir is not None
        return self.parts.channel_dir

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Block until the entry waits for its job; SandboxError if it could not start."""
        if self._ready:
            return
        if self.parts.thread is not None:
            self.parts.thread.join(timeout_s)
        if self.parts.error is not None:
            engine = self.key[0] or "the default socket (DOCKER_HOST unset)"
            raise SandboxError(f"docker could not start the sandbox container on {engine}: "
                               f"{self.parts.error}")
        sock = self.parts.sock
        if sock is None:
            raise SandboxError("the sandbox container was not started in time")
        demux, deadline = Demux(), time.monotonic() + timeout_s
        while len(demux.out) < len(READY):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise SandboxError("the sandbox container did not become ready in time")
            data = sock.recv(65536)
            if not data:
                raise ContainerGone("the sandbox container ended before it was ready")
            demux.feed(data)
        if not demux.out.startswith(READY):
            raise SandboxError("the sandbox container sent an unexpected greeting")
        self._rest = bytes(demux.pending + demux.out[len(READY):] + demux.err)
        self._ready = True

    def alive(self) -> bool:
        """Ready and still waiting: nothing arrived on its stream (an end or a word)."""
        sock = self.parts.sock
        return (self._ready and sock is not None and not self._rest
                and not select.select([sock], [], [], 0)[0])

    def serve(self, config: str, payload: str, limits: Limits, marker: str,
              cancel_check: Callable[[], bool] | None) -> Outcome:
        """Hand the job over and follow it to its frame (or its end, or its stop)."""
        sock = self.parts.sock
        assert sock is not None and self._ready
        self.handed_over = True
        started = time.monotonic()
        try:
            sock.sendall(f"{config}\n{payload}\n".encode())
        except OSError as exc:
            raise ContainerGone(f"the sandbox container went away: {exc}") from exc
        stream = _follow(sock, limits, marker, cancel_check, started)
        if stream.stop is not None:
            self._kill()
        frame_code = None if stream.frame is None else stream.frame.get("exit_code")
        state: DockerState = {}
        if stream.stop is not None or stream.frame is None or frame_code == 137:
            state = self._final_state()  # killed: by us, the memory cgroup or another cause
        out, frame = split_frame(bytes(stream.demux.out), marker)
        return Outcome(state=state, stop=stream.stop, frame=frame, stdout=out,
                       stderr=bytes(stream.demux.err),
                       duration_ms=int((time.monotonic() - started) * 1000))

    def _kill(self) -> None:
        from docker.errors import DockerException

        try:
            self.container.kill()
        except DockerException:
            pass  # it ended by itself meanwhile

    def _final_state(self) -> DockerState:
        from docker.errors import DockerException
        from requests.exceptions import RequestException

        try:
            self.container.wait(timeout=STATE_TIMEOUT_S)
            self.container.reload()
        except (DockerException, RequestException):
            return {}
        return dict(self.container.attrs.get("State", {}))

    def release(self) -> None:
        """Remove the container (in the background) and its channel directory (idempotent)."""
        self._release()


class Frame(TypedDict, total=False):
    """The last line `docker_entry` writes: how the job ended, its output's sizes, its files."""

    exit_code: int
    stop: str | None
    stdout_total: int
    stderr_total: int
    files: str  # a base64 tar
    omitted: list[str]


DockerState = dict[str, object]  # the engine's own container State, as it reports it


class Outcome(NamedTuple):
    state: DockerState  # the engine's State when the job was killed, else empty
    stop: str | None
    frame: Frame | None
    stdout: bytes
    stderr: bytes
    duration_ms: int


def split_frame(stdout: bytes, marker: str) -> tuple[bytes, Frame | None]:
    """The job's stdout and the entry's frame (the last marked line), if there is one."""
    at = stdout.rfind(b"\n" + marker.encode())
    if at < 0:
        return stdout, None
    line = stdout[at + 1 + len(marker):].strip()
    try:
        return stdout[:at], json.loads(base64.b64decode(line))
    except ValueError:
        return stdout, None


def fit_key(image: str, runtime: str, limits: Limits) -> tuple[Any, ...]:
    """On which engine (DOCKER_HOST now, first: the engine a container is built on, even by a
    background build that starts after DOCKER_HOST changed) and with what a container is
    created; the job's other limits travel with it."""
    return (os.environ.get("DOCKER_HOST"), image, runtime, limits.memory_mb, limits.pids,
            limits.cpu_s, limits.file_size_mb, limits.open_files, limits.workdir_mb,
            limits.output_kb)


def _builder(parts: _Parts, create: Create, engine: str | None) -> Callable[[], None]:
    def build() -> None:
        from docker.errors import DockerException

        try:
            _sweep_once(engine)
            parts.channel_dir = Path(tempfile.mkdtemp(prefix="channel-", dir=base_dir()))
            parts.channel_dir.chmod(0o755)  # the container's user (10001) reaches the socket
            kwargs = create(str(parts.channel_dir))
            kwargs["labels"] = {**kwargs["labels"], OWNER_LABEL: owner()}
            kwargs["stdin_open"] = True
            parts.container = client_for(engine).containers.create(**kwargs)
            attached = parts.container.attach_socket(
                params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            parts.sock = getattr(attached, "_sock", attached)  # the raw socket under SocketIO
            parts.container.start()
        except (DockerException, OSError) as exc:
            parts.error = exc
    return build


class Demux:
    """Docker's multiplexed attach stream (no tty): 8-byte headers, stdout 1 / stderr 2."""

    def __init__(self) -> None:
        self.pending = bytearray()
        self.out = bytearray()
        self.err = bytearray()

    def feed(self, data: bytes) -> None:
        self.pending += data
        at = 0
        while len(self.pending) - at >= 8:
            size = int.from_bytes(self.pending[at + 4:at + 8], "big")
            if len(self.pending) - at - 8 < size:
                break
            (self.err if self.pending[at] == 2 else self.out).extend(
                self.pending[at + 8:at + 8 + size])
            at += 8 + size
        del self.pending[:at]


class _Stream:
    def __init__(self) -> None:
        self.demux = Demux()
        self.stop: str | None = None
        self.frame: Frame | None = None


def _follow(sock: socket.socket, limits: Limits, marker: str,
            cancel_check: Callable[[], bool] | None, started: float) -> _Stream:
    """Read the container's output until its frame (and the stderr it announces) arrived,
    the container ended, or the run is stopped (timeout, cancel, too much output)."""
    stream = _Stream()
    demux = stream.demux
    cap = limits.output_kb * 1024
    out_bound, err_bound = 2 * cap + 2 * limits.collect_kb * 1024 + MB, 2 * cap + MB
    deadline, grace, took = started + limits.timeout_s, 0.0, False
    while True:
        now = time.monotonic()
        if stream.frame is not None:
            if len(demux.err) >= min(int(stream.frame.get("stderr_total", 0)), cap):
                break
            grace = grace or now + STDERR_GRACE_S
            if now >= grace:
                break
        elif now >= deadline:
            stream.stop = "timeout"
            break
        elif cancel_check is not None and cancel_check():
            stream.stop = "cancelled"
            break
        wait = (grace or deadline) - now
        if cancel_check is not None:
            wait = min(wait, POLL_S)
        if not select.select([sock], [], [], max(wait, 0))[0]:
            continue
        data = sock.recv(1 << 16)
        if not data:
            if not took:
                raise ContainerGone("the sandbox container ended before it took its job")
            break
        demux.feed(data)
        if not took and len(demux.out) >= len(TOOK):
            if demux.out.startswith(TOOK):
                del demux.out[:len(TOOK)]
            took = True
        if len(demux.out) > out_bound or len(demux.err) > err_bound:
            stream.stop = "output_limit"
            break
        if stream.frame is None and demux.out.endswith(b"\n") and marker.encode() in demux.out:
            stream.frame = split_frame(bytes(demux.out), marker)[1]
    return stream


def _release(parts: _Parts, owner_pid: int) -> None:
    if os.getpid() != owner_pid:  # a forked copy: the container is the parent's to remove
        return
    if parts.thread is not None and parts.thread is not threading.current_thread():
        parts.thread.join(READY_TIMEOUT_S)
    _removals().put(parts)


def _remove(parts: _Parts) -> None:
    from docker.errors import DockerException

    if parts.sock is not None:
        try:
            parts.sock.close()
        except OSError:
            pass
    if parts.container is not None:
        try:
            parts.container.remove(force=True)
        except DockerException:
            pass  # already gone
    if parts.channel_dir is not None:
        remove_tree(parts.channel_dir)


def _removals() -> queue.Queue[_Parts]:
    state = _state()
    with _client_lock:
        if state.reaper is None:
            work: queue.Queue[_Parts] = queue.Queue()

            def reap() -> None:
                while True:
                    parts = work.get()
                    try:
                        _remove(parts)
                    finally:
                        work.task_done()

            threading.Thread(target=reap, name="sandbox-remove", daemon=True).start()
            state.reaper = work
        return state.reaper


def settle() -> None:
    """Wait for this process's background work: containers being prepared are created and
    started, released ones removed."""
    for each in list(_every):
        thread = each.parts.thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(READY_TIMEOUT_S)
    reaper = _state().reaper
    if reaper is not None:
        reaper.join()


def _sweep_once(engine: str | None) -> None:
    """Remove the prepared containers of processes of this host that died (once a process
    and engine)."""
    state = _state()
    if engine in state.swept:
        return
    state.swept.add(engine)
    here = socket.gethostname()
    for container in client_for(engine).containers.list(all=True,
                                                        filters={"label": OWNER_LABEL}):
        where, _, pid = container.labels.get(OWNER_LABEL, "").rpartition(":")
        if where == here and pid.isdigit() and not pid_alive(int(pid)):
            stale = _Parts()
            stale.container = container
            _removals().put(stale)


def take(key: tuple[Any, ...], create: Create) -> Prepared:
    """This thread's prepared container when it fits and lives, else one started now."""
    prepared: Prepared | None = getattr(_local, "prepared", None)
    _local.prepared = None
    if prepared is not None:
        if prepared.key == key and prepared.owner_pid == os.getpid():
            try:
                prepared.wait_ready()
            except SandboxError:
                pass
            if prepared.alive():
                return prepared
        prepared.release()
    return cold(key, create)


def cold(key: tuple[Any, ...], create: Create) -> Prepared:
    fresh = Prepared(key, create, background=False)
    try:
        fresh.wait_ready()
    except BaseException:
        fresh.release()
        raise
    return fresh


def prepare(key: tuple[Any, ...], create: Create) -> None:
    """Start preparing this thread's next container; returns at once."""
    if getattr(_local, "prepared", None) is None:
        _local.prepared = Prepared(key, create, background=True)


def prepared() -> Prepared | None:
    return getattr(_local, "prepared", None)


def every_prepared() -> list[Prepared]:
    """The containers of every thread of this process that still wait for a job."""
    return [each for each in list(_every) if not each.handed_over and each.owner_pid == os.getpid()]


def release_all() -> None:
    """Remove every prepared container of this process and wait for it (tests, shutdown)."""
    _local.prepared = None
    for each in list(_every):
        each.release()
    settle()


atexit.register(release_all)


class ReleaseOnShutdown(Middleware):
    """Dramatiq middleware: a stopping worker removes its prepared containers (a worker
    process exits without running atexit hooks)."""

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        release_all()
