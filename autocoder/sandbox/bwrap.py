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
* The job's limits (address space, processes, CPU seconds, file size, open files) are hard
  rlimits that the launcher (launcher.py), already inside and unprivileged, sets on itself
  just before it becomes the job: they bind the job and not bwrap.
* The job's total memory, all its processes together, is bound from the host (memory.py):
  a memory cgroup per job where the host gives one, else a watchdog over its process tree.
* Each worker thread keeps the sandbox for its next run prepared (standby.py): the set-up
  happens between runs, and every job still gets a sandbox of its own.

Without root, bwrap creates its own user namespace (--unshare-user --disable-userns) and the
workdir is a plain directory whose size the supervisor polls.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass
from pathlib import Path

import autocoder.sandbox.launcher as launcher
import autocoder.sandbox.memory as memory
import autocoder.sandbox.process as process
import autocoder.sandbox.standby as standby
from autocoder import metrics
from autocoder.sandbox.channel import BWRAP_DIR, Channel
from autocoder.sandbox.types import Limits, PluginRuntimeError, RunResult, SandboxError
from autocoder.sandbox.userns import (
    HOST_ENV,
    INSIDE_UID,
    SANDBOX_UID,
    drop_to_sandbox_uid,
    thread_namespace,
)
from autocoder.sandbox.workdir import Workdir
from autocoder.sandbox.workdir import collect as collect_files

__all__ = ["SANDBOX_UID", "bwrap_argv", "host_layout", "job_message", "run"]

logger = logging.getLogger(__name__)

WORKDIR = "/workdir"
# Paths inside the sandbox (fresh, size-capped tmpfs mounts), not the host's temp directory.
SANDBOX_TMP = "/tmp"  # noqa: S108
SANDBOX_SHM = "/dev/shm"  # noqa: S108
_SYSTEM_DIRS = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/share/zoneinfo")
_SYSTEM_TOPS = ("/lib", "/lib64", "/lib32")
_SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/localtime")
_LAUNCHER_SOURCE = Path(launcher.__file__).read_text(encoding="utf-8")
# The flags the launcher's interpreter runs with (plus -B): what an in-process job must ask for.
IN_PROCESS_PREFIX = ("python", "-I", "-S", "-B")


@dataclass(frozen=True)
class HostLayout:
    """What of the host the sandbox sees: (source, dest) read-only binds and symlinks."""

    binds: tuple[tuple[str, str], ...]
    symlinks: tuple[tuple[str, str], ...]  # (target, link path)
    interpreter: str
    bwrap: str


def host_layout() -> HostLayout:
    """The layout for the plugin runtime configured now (computed once per runtime)."""
    from autocoder.runtime import runtime_dir

    return _host_layout(str(runtime_dir()))


@functools.cache
def _host_layout(runtime: str) -> HostLayout:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise SandboxError("bwrap not found: install bubblewrap (apt-get install bubblewrap) "
                           "or set SANDBOX_BACKEND=docker")
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
    interpreter, prefixes = _runtime_interpreter()
    for prefix in prefixes:
        binds[os.path.abspath(prefix)] = os.path.realpath(prefix)
    for hop in _symlink_hops(interpreter):  # every directory the exec will pass through
        directory = os.path.dirname(hop)
        if not any(directory == dest or directory.startswith(dest + "/") for dest in binds):
            binds[directory] = os.path.realpath(directory)
    return HostLayout(tuple((src, dest) for dest, src in sorted(binds.items())), tuple(links),
                      interpreter, bwrap)


def _runtime_interpreter() -> tuple[str, set[str]]:
    """The plugin runtime's python and the prefixes it needs: its own and its base Python's.

    Never the portal's venv: plugin code must not see Django and the rest (see
    autocoder/runtime). argv[0] stays inside the runtime for its site-packages to be used.
    """
    from autocoder.runtime import runtime_dir, runtime_problem, runtime_python

    problem = runtime_problem()
    if problem:
        raise PluginRuntimeError(problem)
    home = _venv_home(runtime_dir())
    return str(runtime_python()), {str(runtime_dir()), os.path.dirname(home) if home else
                                   sys.base_prefix}


def _venv_home(directory: Path) -> str:
    """The base Python's bin directory, as the runtime's pyvenv.cfg names it."""
    for line in (directory / "pyvenv.cfg").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home":
            return value.strip()
    return ""


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


def job_message(command: list[str], limits: Limits, layout: HostLayout, *,
                in_process: bool = False) -> bytes:
    """What the launcher reads: its limits, then the job's argv (see launcher.py). With
    `in_process`, `command` is `python -I -S -B SCRIPT ARGS...` and the launcher, that very
    interpreter already started, runs SCRIPT itself."""
    mb = 1024 * 1024
    values = [limits.memory_mb * mb, limits.pids, limits.cpu_s, limits.cpu_s + 1,
              limits.file_size_mb * mb, limits.open_files]
    if in_process:
        tag, argv = launcher.IN_PROCESS_TAG, command[len(IN_PROCESS_PREFIX):]
    else:
        tag = launcher.MESSAGE_TAG
        argv = [layout.interpreter, *command[1:]] if command[0] == "python" else command
    return b"\x00".join([tag, *(str(v).encode() for v in values),
                         *(os.fsencode(arg) for arg in argv)])


def bwrap_argv(*, layout: HostLayout, workdir_mb: int, workdir: str,
               userns_fd: int | None) -> list[str]:
    """The complete bwrap command line, ending with the launcher (pure: tests assert on it)."""
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
             "--size", str(workdir_mb * mb), "--tmpfs", SANDBOX_TMP]
    for source, dest in under_tmp:
        argv += ["--ro-bind", source, dest]
    for target, link in links_under_tmp:
        argv += ["--symlink", target, link]
    argv += ["--bind", workdir, WORKDIR, "--remount-ro", "/", "--chdir", WORKDIR,
             "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID), "--"]
    return argv + [layout.interpreter, "-S", "-I", "-c", _LAUNCHER_SOURCE]


# --- a prepared sandbox ---------------------------------------------------------------

def new_standby(workdir_mb: int) -> standby.Standby:
    """Start a sandbox whose launcher will wait for its job (see standby.py)."""
    as_root = os.geteuid() == 0
    owner = (SANDBOX_UID, SANDBOX_UID) if as_root else None
    workdir = Workdir(size_mb=workdir_mb, owner=owner, use_tmpfs=as_root)

    layout = host_layout()
    # The sandbox starts in the cgroup of the job it will run (memory.py): handing the job
    # over then moves no process, which would cost milliseconds on the run's path.
    cgroup = memory.cgroup_for_sandbox()
    enter = cgroup.enter_argv() if cgroup is not None else []

    def start(prepared: Workdir) -> subprocess.Popen[bytes]:
        namespace = thread_namespace() if as_root else None
        argv = bwrap_argv(layout=layout, workdir_mb=workdir_mb,
                          workdir=str(prepared.path),
                          userns_fd=namespace.fd if namespace else None)
        if namespace is None:
            return process.spawn(enter + argv, env=HOST_ENV, stdin=subprocess.PIPE)
        return process.spawn(enter + drop_to_sandbox_uid() + argv, env=HOST_ENV,
                             stdin=subprocess.PIPE, popen_kwargs={"pass_fds": (namespace.fd,)})

    try:
        prepared = standby.Standby(workdir, start)
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    _layouts[id(prepared)] = layout
    if cgroup is not None:
        _cgroups[prepared] = cgroup
        weakref.finalize(prepared, memory.discard, cgroup, os.getpid())
    return prepared


# The layout each prepared sandbox was started with: one prepared for another plugin runtime
# (PLUGIN_RUNTIME_DIR changed, as tests do) does not see the current runtime and is not used.
_layouts: dict[int, HostLayout] = {}
# The memory cgroup each prepared sandbox was started in (removed with the sandbox when it
# runs no job).
_cgroups: weakref.WeakKeyDictionary[standby.Standby, memory.JobCgroup] = (
    weakref.WeakKeyDictionary())


def prepared_cgroup(sandbox: standby.Standby) -> Path | None:
    """The memory cgroup a prepared sandbox was started in, until its job is handed over."""
    cgroup = _cgroups.get(sandbox)
    return cgroup.path if cgroup is not None else None


def _ready_sandbox(limits: Limits) -> standby.Standby:
    """This thread's prepared sandbox, or a fresh one when it died or does not fit.

    A prepared sandbox can die between runs (the tail of a fork bomb in the same namespace
    can make its start fail): one fresh attempt follows before the failure is reported.
    """
    sandbox = standby.take(limits, new_standby)
    try:
        if _layouts.pop(id(sandbox), None) != host_layout():
            raise SandboxError("prepared for another plugin runtime")
        sandbox.wait_ready()
        return sandbox
    except SandboxError:
        sandbox.release()
    sandbox = new_standby(limits.workdir_mb)
    _layouts.pop(id(sandbox), None)
    try:
        sandbox.wait_ready()
    except SandboxError:
        sandbox.release()
        raise
    return sandbox


# --- a run -------------------------------------------------------------------------

def run(files: dict[str, str | bytes], command: list[str], limits: Limits, *,
        collect: list[str] | None = None,
        cancel_check: process.CancelCheck | None = None,
        in_process: bool = False, channel: Channel | None = None) -> RunResult:
    layout = host_layout()
    memory.configured_choice()  # a bad SANDBOX_MEMORY_BOUND fails before anything starts
    with metrics.sandbox_start("bwrap"):
        sandbox = _ready_sandbox(limits)
    bound: memory.JobBound | None = None
    try:
        workdir = sandbox.workdir
        workdir.write(files)
        if channel is not None:  # in the workdir, which the sandbox has bound already
            channel.open(workdir.path / BWRAP_DIR, owner=workdir.owner)
        quota = None if workdir.mounted else process.tree_over_quota(
            workdir.path, limits.workdir_mb * 1024 * 1024)
        # The sandbox is ready and its launcher waits for the job: nothing of it runs the
        # job's code yet, so the whole tree can be put under the job's memory bound now.
        bound = memory.bound_job(sandbox.proc.pid, limits.memory_mb,
                                 prepared=_cgroups.pop(sandbox, None))
        started = time.monotonic()
        proc = sandbox.hand_over(job_message(command, limits, layout, in_process=in_process))
        outcome = process.watch(proc, limits=limits, started=started,
                                cancel_check=cancel_check, over_quota=quota,
                                memory_exceeded=bound.exceeded)
        over_memory = outcome.stop == "memory_limit" or bound.exceeded()
        _raise_if_sandbox_failed(outcome)
        files_out, omitted = ({}, []) if not collect else collect_files(
            workdir.path, collect, limits.collect_kb * 1024)
    finally:
        if channel is not None:
            channel.close()
        sandbox.release()
        if bound is not None:
            bound.close()
    _prepare_next(limits)
    return _result(outcome, files_out, omitted,
                   memory_limit_mb=limits.memory_mb if over_memory else None)


def _prepare_next(limits: Limits) -> None:
    """Start the next run's sandbox; a failure here must not cost this run its result."""
    try:
        standby.prepare(limits, new_standby)
    except (SandboxError, OSError) as exc:  # e.g. EAGAIN right after a fork bomb
        logger.warning("could not prepare the next sandbox (the next run builds one): %s", exc)


def _raise_if_sandbox_failed(outcome: process.Supervised) -> None:
    """The launcher reports its own failures as exit 1 and a line starting with "launcher: "."""
    if outcome.stop is not None or outcome.returncode != 1:
        return
    first = outcome.stderr.text().lstrip().split("\n", 1)[0]
    if first.startswith(("setpriv: ", "bwrap: ", "launcher: ")):
        raise SandboxError(f"the bwrap sandbox could not start the job: {first}")


def _result(outcome: process.Supervised, files: dict[str, bytes],
            omitted: list[str], *, memory_limit_mb: int | None = None) -> RunResult:
    """`memory_limit_mb` is set when the job's total memory went over that limit."""
    stderr = outcome.stderr.text()
    exit_code, timed_out, oom, reason = process.verdict(
        returncode=outcome.returncode, stop=outcome.stop, stderr=stderr,
        memory_exceeded=memory_limit_mb is not None)
    if memory_limit_mb is not None and reason == "memory_limit":
        stderr += ("" if not stderr or stderr.endswith("\n") else "\n") + \
            memory.exceeded_note(memory_limit_mb)
    return RunResult(
        exit_code=exit_code, timed_out=timed_out, oom=oom, killed_reason=reason,
        stdout=outcome.stdout.text(), stderr=stderr,
        stdout_truncated=outcome.stdout.truncated, stderr_truncated=outcome.stderr.truncated,
        duration_ms=outcome.duration_ms, backend="bwrap", files=files, files_omitted=omitted,
    )


# A warm sandbox's call (warm.py) ends in a RunResult built the same way.
run_result = _result
