"""The bubblewrap backend: every namespace unshared, a read-only view of the interpreter only.

How the job is kept in when the portal runs as root (the usual case on a worker host):

* The job runs as an unprivileged host uid (SANDBOX_UID), never as root, so that RLIMIT_NPROC
  applies (the kernel exempts uid 0 from it) and root-owned host files stay closed to it.
* bwrap enters a user namespace prepared per worker thread, owned by that uid. Its map also
  holds uid 0, which lets bwrap (with its namespace capabilities, before dropping them) bind
  the interpreter from under /root, whose mode is 0700. The job itself has no capabilities,
  runs as uid 1000 inside, and cannot create further user namespaces (the holder sets
  user.max_user_namespaces to 0 in it). One namespace per thread keeps process counts
  (RLIMIT_NPROC is counted per user namespace) separate between concurrent runs.
* The workdir is a size-capped tmpfs; /tmp and /dev/shm are size-capped tmpfs inside.

Without root, bwrap creates its own user namespace (--unshare-user --disable-userns) and the
workdir is a plain directory whose size the supervisor polls.
"""

from __future__ import annotations

import functools
import os
import select
import shutil
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

from autocoder.sandbox import process
from autocoder.sandbox.types import Limits, RunResult, SandboxError
from autocoder.sandbox.workdir import Workdir
from autocoder.sandbox.workdir import collect as collect_files

SANDBOX_UID = 2_000_000_000  # host uid and gid of jobs when the portal runs as root
INSIDE_UID = 1000
WORKDIR = "/workdir"
# Paths inside the sandbox (fresh, size-capped tmpfs mounts), not the host's temp directory.
SANDBOX_TMP = "/tmp"  # noqa: S108
SANDBOX_SHM = "/dev/shm"  # noqa: S108
HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
_SYSTEM_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/share/zoneinfo")
_SYSTEM_TOPS = ("/lib", "/lib64", "/lib32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")


def drop_to_sandbox_uid() -> list[str]:
    """Argv prefix that makes the rest run as SANDBOX_UID.

    setpriv rather than Popen(user=...): Python can only vfork without a uid change, and a
    full fork of a worker that has loaded torch (hundreds of MB) costs tens of milliseconds
    per run; the extra exec costs about one.
    """
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise SandboxError("setpriv not found: install util-linux")
    return [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--"]


@dataclass(frozen=True)
class HostLayout:
    """What of the host the sandbox sees: (source, dest) read-only binds and symlinks."""

    binds: tuple[tuple[str, str], ...]
    symlinks: tuple[tuple[str, str], ...]  # (target, link path)
    interpreter: str
    prlimit: str
    bwrap: str


@functools.cache
def host_layout() -> HostLayout:
    bwrap, prlimit = shutil.which("bwrap"), shutil.which("prlimit")
    if not bwrap:
        raise SandboxError("bwrap not found: install bubblewrap (apt-get install bubblewrap) "
                           "or set SANDBOX_BACKEND=docker")
    if not prlimit:
        raise SandboxError("prlimit not found: install util-linux")
    binds: dict[str, str] = {}
    links: list[tuple[str, str]] = []
    for top in _SYSTEM_TOPS:
        if os.path.islink(top):
            links.append((os.readlink(top), top))
        elif os.path.isdir(top):
            binds[top] = top
    for path in _SYSTEM_DIRS + _SYSTEM_FILES:
        if os.path.islink(path) and path in _SYSTEM_FILES:
            links.append((os.readlink(path), path))
        elif os.path.exists(path):
            binds[path] = os.path.realpath(path)
    binds[prlimit] = os.path.realpath(prlimit)
    interpreter = _interpreter_path()
    for prefix in {sys.prefix, sys.base_prefix}:
        binds[os.path.abspath(prefix)] = os.path.realpath(prefix)
    for hop in _symlink_hops(interpreter):  # every directory the exec will pass through
        directory = os.path.dirname(hop)
        if not any(directory == dest or directory.startswith(dest + "/") for dest in binds):
            binds[directory] = os.path.realpath(directory)
    return HostLayout(tuple((src, dest) for dest, src in sorted(binds.items())), tuple(links),
                      interpreter, prlimit, bwrap)


def _interpreter_path() -> str:
    """The project's venv python: argv[0] must stay inside the venv for it to be used."""
    executable = os.path.abspath(sys.executable)
    if executable.startswith(os.path.abspath(sys.prefix) + "/"):
        return executable
    return os.path.join(sys.prefix, "bin", "python3")


def _symlink_hops(path: str, max_hops: int = 16) -> list[str]:
    hops = [path]
    for _ in range(max_hops):
        if not os.path.islink(path):
            break
        path = os.path.normpath(os.path.join(os.path.dirname(path), os.readlink(path)))
        hops.append(path)
    return hops


def _is_under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def limit_argv(limits: Limits, prlimit: str) -> list[str]:
    """prlimit runs inside, after the namespaces exist: the limits bind the job, not bwrap."""
    mb = 1024 * 1024
    return [
        prlimit,
        f"--as={limits.memory_mb * mb}",
        f"--nproc={limits.pids}",
        f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}",  # SIGXCPU first, SIGKILL a second later
        f"--fsize={limits.file_size_mb * mb}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    ]


def bwrap_argv(*, layout: HostLayout, limits: Limits, workdir: str, command: list[str],
               userns_fd: int | None) -> list[str]:
    """The complete bwrap command line (pure: tests assert on it)."""
    mb = 1024 * 1024
    if userns_fd is not None:
        argv = [layout.bwrap, "--userns", str(userns_fd)]
    else:
        argv = [layout.bwrap, "--unshare-user", "--disable-userns"]
    argv += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
             "--unshare-cgroup-try", "--hostname", "sandbox", "--die-with-parent",
             "--new-session", "--clearenv", "--setenv", "PATH",
             f"{os.path.dirname(layout.interpreter)}:/usr/bin:/bin",
             "--setenv", "HOME", SANDBOX_TMP, "--setenv", "LANG", "C.UTF-8"]
    # A venv checked out under /tmp (a CI clone, say) must be bound after the private /tmp is
    # mounted, or that tmpfs would hide it.
    under_tmp = [(source, dest) for source, dest in layout.binds if _is_under(dest, SANDBOX_TMP)]
    for source, dest in layout.binds:
        if (source, dest) not in under_tmp:
            argv += ["--ro-bind", source, dest]
    links_under_tmp = [(t, link) for t, link in layout.symlinks if _is_under(link, SANDBOX_TMP)]
    for target, link in layout.symlinks:
        if (target, link) not in links_under_tmp:
            argv += ["--symlink", target, link]
    argv += ["--proc", "/proc", "--dev", "/dev",
             "--size", str(mb), "--tmpfs", SANDBOX_SHM, "--remount-ro", "/dev",
             "--size", str(limits.workdir_mb * mb), "--tmpfs", SANDBOX_TMP]
    for source, dest in under_tmp:
        argv += ["--ro-bind", source, dest]
    for target, link in links_under_tmp:
        argv += ["--symlink", target, link]
    argv += ["--bind", workdir, WORKDIR, "--remount-ro", "/", "--chdir", WORKDIR,
             "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--"]
    argv += limit_argv(limits, layout.prlimit)
    argv += [layout.interpreter, *command[1:]] if command[0] == "python" else command
    return argv


# --- the per-thread user namespace (root mode) ---------------------------------------

_HOLDER_SCRIPT = (
    "echo 0 > /proc/sys/user/max_user_namespaces && echo ready && "
    "exec setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- cat"
)


class _Holder:
    """The `cat` process keeping a user namespace alive, and our fd on that namespace."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.fd = -1

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()  # cat sees EOF and exits: no holder outlives us
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe and not pipe.closed:
                pipe.close()


class UserNamespace:
    """A user namespace owned by SANDBOX_UID in which bwrap sets up each run."""

    def __init__(self) -> None:
        unshare = shutil.which("unshare")
        if not unshare:
            raise SandboxError("unshare not found: install util-linux")
        proc = subprocess.Popen(
            [*drop_to_sandbox_uid(), unshare, "--user", "--keep-caps", "--", "/bin/sh", "-c",
             _HOLDER_SCRIPT],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=HOST_ENV, start_new_session=True, close_fds=True,
        )
        self._holder = _Holder(proc)
        weakref.finalize(self, self._holder.close)
        self._await_ready()
        mapping = f"0 0 1\n{INSIDE_UID} {SANDBOX_UID} 1\n"
        try:
            Path(f"/proc/{proc.pid}/uid_map").write_text(mapping)
            Path(f"/proc/{proc.pid}/gid_map").write_text(mapping)
            self._holder.fd = os.open(f"/proc/{proc.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            self._holder.close()
            raise SandboxError(f"cannot prepare the sandbox user namespace: {exc}") from exc

    @property
    def fd(self) -> int:
        return self._holder.fd

    def _await_ready(self) -> None:
        proc = self._holder.proc
        assert proc.stdout is not None and proc.stderr is not None
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        line = proc.stdout.readline() if ready else b""
        if line != b"ready\n":
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            detail = proc.stderr.read().decode(errors="replace").strip()
            self._holder.close()
            raise SandboxError(f"cannot create the sandbox user namespace: {detail or 'timeout'}")

    def alive(self) -> bool:
        return self._holder.fd >= 0 and self._holder.proc.poll() is None

    def close(self) -> None:
        self._holder.close()


_local = threading.local()


def thread_namespace() -> UserNamespace:
    namespace = getattr(_local, "namespace", None)
    if namespace is None or not namespace.alive():
        namespace = _local.namespace = UserNamespace()
    return namespace


# --- a run -------------------------------------------------------------------------

def run(files: dict[str, str | bytes], command: list[str], limits: Limits, *,
        collect: list[str] | None = None,
        cancel_check: process.CancelCheck | None = None) -> RunResult:
    layout = host_layout()
    as_root = os.geteuid() == 0
    owner = (SANDBOX_UID, SANDBOX_UID) if as_root else None
    with Workdir(size_mb=limits.workdir_mb, owner=owner, use_tmpfs=as_root) as workdir:
        workdir.write(files)
        namespace = thread_namespace() if as_root else None
        argv = bwrap_argv(layout=layout, limits=limits, workdir=str(workdir.path),
                          command=command, userns_fd=namespace.fd if namespace else None)
        popen: dict[str, object] = {}
        if namespace is not None:
            argv = drop_to_sandbox_uid() + argv
            popen = {"pass_fds": (namespace.fd,)}
        quota = None if workdir.mounted else process.tree_over_quota(
            workdir.path, limits.workdir_mb * 1024 * 1024)
        outcome = process.supervise(argv, limits=limits, env=HOST_ENV,
                                    cancel_check=cancel_check, over_quota=quota,
                                    popen_kwargs=popen)
        _raise_if_sandbox_failed(outcome)
        files_out, omitted = ({}, []) if not collect else collect_files(
            workdir.path, collect, limits.collect_kb * 1024)
    return _result(outcome, files_out, omitted)


def _raise_if_sandbox_failed(outcome: process.Supervised) -> None:
    """setpriv, bwrap and prlimit report their own failures as exit 1 and a prefixed line.

    `prlimit: failed to execute X` is the job's own mistake (no such program), not ours.
    """
    if outcome.stop is not None or outcome.returncode != 1:
        return
    first = outcome.stderr.text().lstrip().split("\n", 1)[0]
    if first.startswith(("setpriv: ", "bwrap: ")) or (
            first.startswith("prlimit: ") and "failed to execute" not in first):
        raise SandboxError(f"the bwrap sandbox could not start the job: {first}")


def _result(outcome: process.Supervised, files: dict[str, bytes],
            omitted: list[str]) -> RunResult:
    exit_code, timed_out, oom, reason = process.verdict(
        returncode=outcome.returncode, stop=outcome.stop, stderr=outcome.stderr.text())
    return RunResult(
        exit_code=exit_code, timed_out=timed_out, oom=oom, killed_reason=reason,
        stdout=outcome.stdout.text(), stderr=outcome.stderr.text(),
        stdout_truncated=outcome.stdout.truncated, stderr_truncated=outcome.stderr.truncated,
        duration_ms=outcome.duration_ms, backend="bwrap", files=files, files_omitted=omitted,
    )
