"""Runs INSIDE a warm bwrap sandbox: import the plugin once, then fork a fresh copy per call.

warm.py starts a sandbox exactly as a per-call run starts one (bwrap.bwrap_argv, the
launcher's limits, the job's memory bound) and hands this script to the launcher in-process,
with the number of a Unix socket it inherited (the control socket) as its argument. It must
stay standalone (the standard library only: nothing of ours is visible inside).

Protocol on the control socket, each frame 4 bytes of length (big-endian) then that many bytes:
* host -> zygote, once: a JSON frame {"runner", "entry", "site"}; the zygote loads the runner
  (host_runner.py, as .pyc or source), imports the plugin's entry module, takes the snapshot
  of its writable places, answers {"ready": true, "preloaded", "fork_safe", "problem"};
* host -> zygote, per call: a JSON frame {"limits": [the launcher's six values]} and a frame
  holding the call's text (call.json); the zygote writes the file, forks, and the child
  lowers its limits to the call's and runs the runner's main(), as a per-call sandbox does;
* zygote -> host, per call, when the child has ended: a JSON frame {"status" (as a shell
  reports it: 128 + signal when killed), "omitted"} and a frame with result.json's bytes
  (empty when there is none); by then every other process of the call is killed and the
  writable places (/workdir, /tmp, /dev/shm) are back as they were in the snapshot.
* EOF on the control socket: the zygote exits.

Nothing a call does survives into the next: its memory is a copy-on-write copy of the zygote
(discarded when it exits), its processes are killed, its files are removed and the snapshot's
files written back. The zygote is not dumpable, so the call (the same uid) cannot ptrace it
or read its memory; it can kill it, which only ends the warm sandbox. docs/sandbox.md, "Warm
sandboxes", says what a plugin could keep between calls (nothing).
"""

from __future__ import annotations

import os
import resource
import signal
import stat
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

WORKDIR = "/workdir"
PLACES = (WORKDIR, "/tmp", "/dev/shm")  # noqa: S108 (the sandbox's private tmpfs mounts)
CALL = ".autocoder/call.json"
RESULT = ".autocoder/result.json"
KEEP = (".autocoder/channel.sock",)  # the host binds it for a call and removes it after
SNAPSHOT_MAX_BYTES = 64 * 1024 * 1024
LIMIT_NAMES = ("as", "nproc", "cpu_soft", "cpu_hard", "fsize", "nofile")
PR_SET_DUMPABLE = 4


def _receive(ctrl: int, size: int) -> bytes | None:
    chunks, got = [], 0
    while got < size:
        chunk = os.read(ctrl, min(size - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def receive(ctrl: int) -> bytes | None:
    header = _receive(ctrl, 4)
    if header is None:
        return None
    return _receive(ctrl, int.from_bytes(header, "big"))


def send(ctrl: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(ctrl, view):]


_libc: list[object] = []


def _dumpable(value: int) -> bool:
    try:
        if not _libc:
            import ctypes

            _libc.append(ctypes.CDLL(None, use_errno=True))
        return _libc[0].prctl(PR_SET_DUMPABLE, value, 0, 0, 0) == 0  # type: ignore[attr-defined]
    except (ImportError, OSError, AttributeError):
        return False


def _load_runner(path: str) -> object:
    module = type(sys)("autocoder_host")
    with open(path, "rb") as stream:
        data = stream.read()
    if path.endswith(".pyc"):
        import marshal

        code = marshal.loads(data[16:])  # noqa: S302 (the runner's bytecode, shipped by the host)
        source_path = path[:-1]
    else:
        source_path = path
        code = compile(data, f"{WORKDIR}/{path}", "exec")
    module.__file__ = f"{WORKDIR}/{source_path}"
    exec(code, module.__dict__)  # noqa: S102 (the runner, by design)
    return module


def _preload(entry: str, site: str) -> tuple[bool, str]:
    """Import the plugin's entry module now, so that no call pays for it. A plugin that
    cannot be imported is not an error here: each call imports it and reports why."""
    sys.path[:0] = [os.getcwd(), site] if site else [os.getcwd()]
    module_name, _, class_name = entry.partition(":")
    try:
        __import__(module_name, fromlist=[class_name])
    except BaseException as exc:  # noqa: BLE001 (the plugin's failure, reported by each call)
        return False, f"{type(exc).__name__}: {exc}"
    return True, ""


def _threads() -> int:
    import _thread

    return _thread._count()  # threads the import started, besides this one


# -- the snapshot of the writable places ------------------------------------------------------

def _walk(top: str) -> list[tuple[str, os.stat_result]]:
    """Every entry under `top` (not following symlinks), parents before children."""
    found: list[tuple[str, os.stat_result]] = []
    pending = [top]
    while pending:
        directory = pending.pop()
        try:
            names = os.listdir(directory)
        except PermissionError:  # a call took its own rights away: give them back
            try:
                os.chmod(directory, 0o700)
                names = os.listdir(directory)
            except OSError:
                continue
        except OSError:
            continue
        for name in names:
            path = f"{directory}/{name}"
            try:
                info = os.lstat(path)
            except OSError:
                continue
            found.append((path, info))
            if stat.S_ISDIR(info.st_mode):
                pending.append(path)
    return found


def snapshot() -> dict[str, tuple[str, bytes, os.stat_result]]:
    """path -> (kind "d"/"f"/"l", content or link target, its lstat) of every place's entries."""
    taken: dict[str, tuple[str, bytes, os.stat_result]] = {}
    total = 0
    for top in PLACES:
        for path, info in _walk(top):
            if stat.S_ISDIR(info.st_mode):
                taken[path] = ("d", b"", info)
            elif stat.S_ISLNK(info.st_mode):
                taken[path] = ("l", os.fsencode(os.readlink(path)), info)
            elif stat.S_ISREG(info.st_mode):
                with open(path, "rb") as stream:
                    data = stream.read()
                total += len(data)
                if total > SNAPSHOT_MAX_BYTES:
                    raise OSError("the plugin's files are too large to keep a warm copy of")
                taken[path] = ("f", data, info)
    for name in KEEP:
        taken.pop(f"{WORKDIR}/{name}", None)
    return taken


def _remove(path: str, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        for inner, inner_info in reversed(_walk(path)):
            _remove_one(inner, inner_info)
    _remove_one(path, info)


def _remove_one(path: str, info: os.stat_result) -> None:
    try:
        if stat.S_ISDIR(info.st_mode):
            os.rmdir(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def _same(info: os.stat_result, kept: tuple[str, bytes, os.stat_result]) -> bool:
    """Unchanged since the snapshot: the same inode and mode, and for a file or link the same
    change time, which every write, chmod or utime moves and no process can set back."""
    was = kept[2]
    if info.st_ino != was.st_ino or info.st_mode != was.st_mode:
        return False
    # a directory's entries are compared one by one (its own times move with them)
    return kept[0] == "d" or (info.st_ctime_ns == was.st_ctime_ns
                              and info.st_size == was.st_size)


def restore(taken: dict[str, tuple[str, bytes, os.stat_result]]) -> None:
    """Put the writable places back as the snapshot has them: whatever a call added, changed
    or removed (its content, its rights) is undone."""
    keep = {f"{WORKDIR}/{name}" for name in KEEP}
    for top in PLACES:
        for path, info in _walk(top):
            if path in keep:
                continue
            kept = taken.get(path)
            if kept is None or not _same(info, kept):
                _remove(path, info)
    for path, (kind, content, was) in list(taken.items()):  # parents before their children
        if os.path.lexists(path):
            continue
        mode = stat.S_IMODE(was.st_mode)
        if kind == "d":
            os.mkdir(path, mode)
            os.chmod(path, mode)
        elif kind == "l":
            os.symlink(os.fsdecode(content), path)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            try:
                view = memoryview(content)
                while view:
                    view = view[os.write(fd, view):]
            finally:
                os.close(fd)
            os.chmod(path, mode)
        taken[path] = (kind, content, os.lstat(path))  # as written back: the next compare


# -- one call -----------------------------------------------------------------------------------

def _others() -> list[int]:
    """The sandbox's processes (its own pid namespace) but its init, this one and zombies."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, os.getpid()):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stream:
                state = stream.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != b"Z":
            found.append(int(name))
    return found


def _kill_the_rest() -> None:
    """Kill what the call left running, and wait until it is gone: no process of a call
    outlives it, nor writes a file after the places are restored."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # every process this one may signal, init excepted
        except ProcessLookupError:
            pass
        if not _others():
            return
        time.sleep(0.001)


def _child(ctrl: int, runner: object, values: list[int]) -> None:
    os.close(ctrl)
    _dumpable(1)  # the call is an ordinary process again (the zygote stays closed to it)
    limits = dict(zip(LIMIT_NAMES, values, strict=True))
    resource.setrlimit(resource.RLIMIT_AS, (limits["as"], limits["as"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_soft"], limits["cpu_hard"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:  # its global generator was seeded once, in the zygote
        numpy_random.seed()
    code = 0
    try:
        runner.main()  # type: ignore[attr-defined]
    except BaseException:  # noqa: BLE001 (what the runner itself could not report)
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _result(budget: int) -> tuple[bytes, bool]:
    """result.json's bytes (not following a symlink), and whether it was left out."""
    try:
        fd = os.open(f"{WORKDIR}/{RESULT}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b"", False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"", True
        data = os.read(fd, budget + 1)
        return (b"", True) if len(data) > budget else (data, False)
    finally:
        os.close(fd)


def _write_call(text: bytes) -> None:
    fd = os.open(f"{WORKDIR}/{CALL}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 0o600)
    try:
        view = memoryview(text)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _status(raw: int) -> int:
    if os.WIFSIGNALED(raw):
        return 128 + os.WTERMSIG(raw)
    return os.WEXITSTATUS(raw)


def serve(ctrl: int, runner: object, taken: dict[str, tuple[str, bytes, os.stat_result]],
          budget: int) -> None:
    while True:
        header = receive(ctrl)
        call = receive(ctrl) if header is not None else None
        if header is None or call is None:
            os._exit(0)
        values = [int(value) for value in _json().loads(header)["limits"]]
        _write_call(call)
        pid = os.fork()
        if pid == 0:
            _child(ctrl, runner, values)
        _, raw = os.waitpid(pid, 0)
        _kill_the_rest()
        result, omitted = _result(budget)
        restore(taken)
        send(ctrl, _json().dumps({"status": _status(raw), "omitted": omitted}).encode())
        send(ctrl, result)


def _json() -> Any:
    import json

    return json


def main() -> None:
    ctrl = int(sys.argv[1])
    json = _json()
    first = receive(ctrl)
    if first is None:
        os._exit(0)
    start = json.loads(first)
    problem = "" if _dumpable(0) else "the zygote cannot be closed to its calls (prctl)"
    runner = _load_runner(start["runner"])
    preloaded, why = _preload(start["entry"], start["site"])
    fork_safe = _threads() == 0
    try:
        taken = snapshot()
    except OSError as exc:
        problem = problem or str(exc)
        taken = {}
    answer = {"ready": True, "preloaded": preloaded, "why": why, "fork_safe": fork_safe,
              "problem": problem}
    send(ctrl, json.dumps(answer).encode())
    if problem or not fork_safe:
        os._exit(0)
    import gc

    # What is loaded now is shared with every call, copy-on-write: kept out of the collector,
    # whose passes would otherwise write to (and so copy) every page of it in each call.
    gc.collect()
    gc.freeze()
    serve(ctrl, runner, taken, int(start["result_max_bytes"]))


if __name__ == "__main__":
    main()
