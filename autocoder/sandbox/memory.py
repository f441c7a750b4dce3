"""The job's total memory: all of a bwrap job's processes together stay within `memory_mb`.

RLIMIT_AS (launcher.py) binds each process alone, so a job of N processes could use
N x memory_mb. One of two mechanisms bounds the job as a whole, chosen with the setting
SANDBOX_MEMORY_BOUND:

* ``cgroup``: a memory cgroup of its own per job, with the limit set in the kernel
  (``memory.limit_in_bytes`` and ``memory.memsw.limit_in_bytes`` on cgroup v1,
  ``memory.max``, ``memory.swap.max`` = 0 and ``memory.oom.group`` on cgroup v2). The kernel
  counts every page the job's processes are charged for (their memory, the page cache they
  fill, the tmpfs files they write) and its OOM killer ends a process of the job at the
  limit; the supervisor sees the OOM kill and stops the whole job. Available when the host
  lets this process create child cgroups: a writable cgroup v1 memory hierarchy (root
  usually has one), or a delegated cgroup v2 subtree with the memory controller enabled.
* ``watchdog``: the supervisor samples the sandbox's process tree every WATCHDOG_POLL_S and
  stops the whole job once its processes together hold more than the limit. Resident memory
  (RSS) is summed first because it is cheap; when that sum is over the limit, the
  proportional set size (PSS, pages shared between processes counted once in total) decides,
  so that a forked child's copy-on-write pages are not counted twice. Sampling can be
  overshot between two samples (bounded by RLIMIT_AS x the process limit), and memory that
  is not mapped by a process (files in the workdir's tmpfs) is not counted.
* ``auto`` (the default): the cgroup when the host gives one, else the watchdog.

`memory_bound_kind()` says which applies to the jobs of this process.

A sandbox is started in the cgroup of the job it will run (bwrap.new_standby): its first
process moves itself in before it execs setpriv and bwrap, so the whole sandbox is born in it.
Moving a running process costs milliseconds (the kernel waits for an RCU grace period), which
this keeps off the run's path. At hand-over (bwrap.run), while the launcher waits for its job
on stdin, the job's limit is set and the sandbox's whole process tree is checked to be in the
cgroup (any process that is not is moved then). The job cannot leave it: there is no /sys in
the sandbox and it has no capabilities.
"""

from __future__ import annotations

import errno
import functools
import itertools
import logging
import os
import shutil
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from autocoder.sandbox.process import children
from autocoder.sandbox.types import SandboxError
from autocoder.sandbox.workdir import pid_alive

logger = logging.getLogger(__name__)

SETTING = "SANDBOX_MEMORY_BOUND"
CHOICES = ("auto", "cgroup", "watchdog")
KINDS = ("cgroup", "watchdog")
JOB_PREFIX = "autocoder-job-"  # a job cgroup is named autocoder-job-<portal pid>-<n>
WATCHDOG_POLL_S = 0.1
REMOVE_TIMEOUT_S = 10.0
_V1_PEAK_SLACK = 4 * 1024 * 1024
_MB = 1024 * 1024
_PAGE = os.sysconf("SC_PAGE_SIZE")

_counter = itertools.count(1)
_logged_lock = threading.Lock()
_logged: set[str] = set()


def configured_choice() -> str:
    """SANDBOX_MEMORY_BOUND from the Django settings (``auto`` when unset)."""
    from django.conf import settings

    value = getattr(settings, SETTING, "auto") if settings.configured else "auto"
    choice = str(value or "auto").strip().lower()
    if choice not in CHOICES:
        raise SandboxError(f"{SETTING} must be one of {', '.join(CHOICES)}; it is {value!r}")
    return choice


# --- what the host offers ------------------------------------------------------------

@dataclass(frozen=True)
class CgroupParent:
    """The cgroup directory this process creates its jobs' cgroups in."""

    version: int  # 1 or 2
    path: Path

    def describe(self) -> str:
        return f"cgroup v{self.version} under {self.path}"


def cgroup_problem() -> str | None:
    """Why this host gives the sandbox no usable memory cgroup; None when it gives one."""
    found = _host_cgroup()
    return found if isinstance(found, str) else None


def memory_bound_kind() -> str:
    """``cgroup`` or ``watchdog``: how the total memory of this process's bwrap jobs is bound.

    Raises SandboxError when SANDBOX_MEMORY_BOUND=cgroup and the host has no usable cgroup
    (every run would fail the same way).
    """
    choice = configured_choice()
    if choice == "watchdog":
        return "watchdog"
    found = _host_cgroup()
    if isinstance(found, CgroupParent):
        return "cgroup"
    if choice == "cgroup":
        raise SandboxError(f"{SETTING}=cgroup, but this host gives the sandbox no usable "
                           f"memory cgroup: {found}")
    return "watchdog"


def memory_bound_summary() -> str:
    """One line for people (doctor, logs): the mechanism and why; never raises."""
    try:
        kind = memory_bound_kind()
    except SandboxError as exc:
        return str(exc)
    found = _host_cgroup()
    if kind == "cgroup" and isinstance(found, CgroupParent):
        return f"cgroup: each job gets a memory cgroup ({found.describe()})"
    if configured_choice() == "watchdog":
        return f"watchdog: {SETTING}=watchdog"
    return f"watchdog: no usable memory cgroup ({found})"


@functools.cache
def _host_cgroup() -> CgroupParent | str:
    """Find (once per process) where job cgroups can be made, or say why they cannot."""
    mounts = _cgroup_mounts()
    own = _own_cgroups()
    problems = []
    if "memory" in mounts.v1 and "memory" in own.v1:
        candidates = [CgroupParent(1, _join(mounts.v1["memory"], own.v1["memory"]))]
    elif mounts.v2 is not None and own.v2 is not None:
        base = _join(mounts.v2, own.v2)
        # our own cgroup (the root one, or one without processes of its own) or, as in a
        # delegated subtree where the portal runs in a leaf, its parent
        candidates = [CgroupParent(2, base)]
        if base != mounts.v2[0]:
            candidates.append(CgroupParent(2, base.parent))
    else:
        return "no cgroup v1 memory hierarchy and no cgroup v2 mount for this process"
    for candidate in candidates:
        problem = _try_parent(candidate)
        if problem is None:
            _sweep_stale(candidate)
            return candidate
        problems.append(f"{candidate.path}: {problem}")
    return "; ".join(problems)


@dataclass
class _Mounts:
    v1: dict[str, tuple[Path, str]]  # controller -> (mount point, root of the mount)
    v2: tuple[Path, str] | None


@dataclass
class _Own:
    v1: dict[str, str]  # controller -> our cgroup path
    v2: str | None


def _cgroup_mounts() -> _Mounts:
    mounts = _Mounts({}, None)
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return mounts
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        root, point = fields[3], Path(_unescape(fields[4]))
        if tail[0] == "cgroup2" and mounts.v2 is None:
            mounts.v2 = (point, root)
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                mounts.v1.setdefault(option, (point, root))
    return mounts


def _own_cgroups() -> _Own:
    own = _Own({}, None)
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return own
    for line in lines:
        number, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if number == "0" and controllers == "":
            own.v2 = path
        for controller in controllers.split(","):
            if controller:
                own.v1[controller] = path
    return own


def _join(mount: tuple[Path, str], path: str) -> Path:
    point, root = mount
    relative = path[len(root):] if root != "/" and path.startswith(root) else path
    return point / relative.lstrip("/")


def _unescape(path: str) -> str:
    return path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
        .replace("\\134", "\\")


def _try_parent(parent: CgroupParent) -> str | None:
    """Create, limit and remove a probe cgroup under `parent`: None when that all works."""
    if not parent.path.is_dir():
        return "not a directory"
    if parent.version == 2:
        try:
            enabled = (parent.path / "cgroup.subtree_control").read_text().split()
        except OSError as exc:
            return f"cannot read cgroup.subtree_control ({exc.strerror})"
        if "memory" not in enabled:
            return "the memory controller is not enabled for its children"
        if not os.access(parent.path / "cgroup.procs", os.W_OK):
            return "cgroup.procs is not writable (the subtree is not delegated to this user)"
    probe = parent.path / f"{JOB_PREFIX}{os.getpid()}-probe-{next(_counter)}"
    try:
        os.mkdir(probe, 0o755)
    except OSError as exc:
        return f"cannot create a child cgroup ({exc.strerror})"
    try:
        _write_limits(parent.version, probe, 64 * _MB)
    except OSError as exc:
        return f"cannot set a memory limit ({exc.strerror})"
    finally:
        try:
            os.rmdir(probe)
        except OSError as exc:
            logger.warning("could not remove the probe cgroup %s: %s", probe, exc)
    return None


def _write_limits(version: int, path: Path, limit: int) -> None:
    if version == 1:
        (path / "memory.limit_in_bytes").write_text(str(limit))
        if (path / "memory.memsw.limit_in_bytes").exists():  # swap accounting on: no swap
            (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
        else:
            _write_if_present(path / "memory.swappiness", "0")
        return
    (path / "memory.max").write_text(str(limit))
    _write_if_present(path / "memory.swap.max", "0")
    _write_if_present(path / "memory.oom.group", "1")  # the OOM killer ends the whole job


def _write_if_present(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except FileNotFoundError:
        pass


def job_cgroups() -> list[Path]:
    """The cgroups of this process's jobs that exist now (diagnostics, tests)."""
    found = _host_cgroup()
    if isinstance(found, str):
        return []
    prefix = f"{JOB_PREFIX}{os.getpid()}-"
    try:
        return sorted(entry for entry in found.path.iterdir() if entry.name.startswith(prefix))
    except OSError:
        return []


def _sweep_stale(parent: CgroupParent) -> None:
    """Remove job cgroups left by a portal process that was killed mid-run.

    Only empty ones: the job of a killed portal died with it (bwrap's --die-with-parent),
    and a cgroup that still holds processes may belong to a portal in another pid namespace
    whose pid merely looks dead from here.
    """
    try:
        entries = list(parent.path.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(JOB_PREFIX):
            continue
        pid = entry.name[len(JOB_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        try:
            os.rmdir(entry)
        except OSError as exc:
            logger.warning("could not remove the stale job cgroup %s: %s", entry, exc)


# --- one job's bound -----------------------------------------------------------------

class JobCgroup:
    """The memory cgroup of one job: made with its sandbox, removed after the job."""

    def __init__(self, parent: CgroupParent) -> None:
        self.version = parent.version
        self.path = parent.path / f"{JOB_PREFIX}{os.getpid()}-{next(_counter)}"
        os.mkdir(self.path, 0o755)

    def enter_argv(self) -> list[str]:
        """Argv prefix that starts the rest in this cgroup: its first process moves itself
        in before it execs the rest, so everything the rest starts is born in the cgroup.

        If the move fails the rest still starts, and `adopt` at hand-over moves the sandbox
        or fails with the reason.
        """
        shell = shutil.which("sh") or "/bin/sh"
        return [shell, "-c", 'echo $$ > "$0" 2>/dev/null; exec "$@"',
                str(self.path / "cgroup.procs")]

    def set_limit(self, limit: int) -> None:
        try:
            _write_limits(self.version, self.path, limit)
        except OSError as exc:
            raise SandboxError(f"could not set the job's memory limit of {limit // _MB} MB "
                               f"on {self.path}: {exc.strerror}") from exc

    def adopt(self, root_pid: int) -> None:
        """Make sure that the process `root_pid` and all its descendants are in this cgroup,
        moving those that are not (a process's first move costs milliseconds: the kernel
        waits for an RCU grace period)."""
        tree = process_tree(root_pid)
        if not tree:
            raise SandboxError("the sandbox went away before its job was handed over")
        for pid in sorted(set(tree) - self.members()):
            try:
                (self.path / "cgroup.procs").write_text(str(pid))
            except ProcessLookupError:
                continue
            except OSError as exc:
                if exc.errno == errno.ESRCH:
                    continue
                raise SandboxError(f"could not move the sandbox into its memory cgroup "
                                   f"{self.path}: {exc.strerror}") from exc
        missing = set(process_tree(root_pid)) - self.members()
        if missing:
            raise SandboxError(f"processes {sorted(missing)} of the sandbox are not in its "
                               f"memory cgroup {self.path}")

    def members(self) -> set[int]:
        try:
            text = (self.path / "cgroup.procs").read_text()
        except OSError:
            return set()
        return {int(line) for line in text.split()}

    def limit_hit(self) -> bool:
        """True once the kernel's OOM killer has ended a process of the job at its limit.

        An OOM kill alone could also come from the whole host running out of memory; the
        job's own limit must have been reached too: on v2 the `oom`/`max` events say so, on
        v1 the peak usage (failcnt stays 0 on recent kernels). The last charge that
        succeeded before the OOM brought the usage within one allocation (a page, or a 2 MB
        huge page) of the limit, hence the slack.
        """
        if self.version == 1:
            events = _counters(self.path / "memory.oom_control")
            kills = events.get("oom_kill", events.get("under_oom", 0))  # before 4.13: under_oom
            if kills == 0:
                return False
            for prefix in ("memory.", "memory.memsw."):
                limit = _counters(self.path / f"{prefix}limit_in_bytes").get("")
                peak = _counters(self.path / f"{prefix}max_usage_in_bytes").get("", 0)
                failed = _counters(self.path / f"{prefix}failcnt").get("", 0)
                if failed > 0 or (limit is not None and peak >= limit - _V1_PEAK_SLACK):
                    return True
            return False
        events = _counters(self.path / "memory.events")
        return events.get("oom_kill", 0) > 0 and events.get("oom", 0) + events.get("max", 0) > 0

    def remove(self) -> None:
        _remove_cgroup(self.version, self.path, timeout_s=REMOVE_TIMEOUT_S)


def _counters(path: Path) -> dict[str, int]:
    """A cgroup file of `name value` lines as a dict; a file holding one number is {"": n}."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    counts = {}
    for line in lines:
        words = line.split()
        if len(words) == 1 and words[0].isdigit():
            counts[""] = int(words[0])
        elif len(words) == 2 and words[1].isdigit():
            counts[words[0]] = int(words[1])
    return counts


def _remove_cgroup(version: int, path: Path, *, timeout_s: float) -> bool:
    """Kill what is still in the cgroup and remove it; False (and a warning) if it stays."""
    deadline = time.monotonic() + timeout_s
    killed = False
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() >= deadline:
                logger.warning("could not remove the job's memory cgroup %s: %s", path, exc)
                return False
        if version == 2 and not killed and (path / "cgroup.kill").exists():
            _write_if_present(path / "cgroup.kill", "1")
            killed = True
        else:
            try:
                pids = (path / "cgroup.procs").read_text().split()
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        time.sleep(0.02)


def process_tree(root_pid: int) -> list[int]:
    """`root_pid`, while it exists, and all of its descendants."""
    found, queue = [], [root_pid]
    while queue:
        pid = queue.pop()
        if not os.path.exists(f"/proc/{pid}"):
            continue
        found.append(pid)
        queue.extend(children(pid))
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except PermissionError:
        return _rss(pid)
    except (OSError, IndexError, ValueError):
        return 0
    return _rss(pid)


class Watchdog:
    """Samples the sandbox's process tree; trips once its processes hold more than `limit`."""

    def __init__(self, root_pid: int, limit: int) -> None:
        self.root_pid = root_pid
        self.limit = limit
        self.tripped = False
        self.peak = 0

    def exceeded(self) -> bool:
        if self.tripped:
            return True
        tree = process_tree(self.root_pid)
        total = sum(_rss(pid) for pid in tree)
        if total > self.limit:  # RSS counts shared pages once per process: PSS decides
            total = sum(_pss(pid) for pid in tree)
        self.peak = max(self.peak, total)
        self.tripped = total > self.limit
        return self.tripped


class JobBound:
    """How one job's total memory is held to its limit; `exceeded()` is polled while it runs."""

    def __init__(self, kind: str, limit_mb: int, *, cgroup: JobCgroup | None = None,
                 watchdog: Watchdog | None = None, spare: JobCgroup | None = None) -> None:
        self.kind = kind
        self.limit_mb = limit_mb
        self.cgroup = cgroup
        self.watchdog = watchdog
        self._remove = [c for c in (cgroup, spare) if c is not None]

    def exceeded(self) -> bool:
        if self.cgroup is not None and self.cgroup.limit_hit():
            return True
        return self.watchdog is not None and self.watchdog.exceeded()

    def close(self) -> None:
        """Remove the job's cgroup, killing whatever of the job is still in it (idempotent)."""
        while self._remove:
            self._remove.pop().remove()


def cgroup_for_sandbox() -> JobCgroup | None:
    """A cgroup for a sandbox about to be started (see JobCgroup.enter_argv), or None when
    the watchdog applies or the cgroup cannot be made (`bound_job` then decides)."""
    try:
        if configured_choice() == "watchdog":
            return None
    except SandboxError:
        return None
    found = _host_cgroup()
    if not isinstance(found, CgroupParent):
        return None
    try:
        return JobCgroup(found)
    except OSError as exc:
        _log_once("create-failed", logging.WARNING, "could not create a memory cgroup "
                  "under %s: %s", found.path, exc)
        return None


def discard(cgroup: JobCgroup, owner_pid: int) -> None:
    """Remove the cgroup of a sandbox that will not run a job (a finalizer: forked copies of
    the portal process leave it to the process that made it)."""
    if os.getpid() == owner_pid:
        cgroup.remove()


def bound_job(root_pid: int, memory_mb: int, *, prepared: JobCgroup | None = None) -> JobBound:
    """Start bounding the total memory of the process tree under `root_pid`.

    Called at hand-over, while the sandbox waits for its job. `prepared` is the cgroup the
    sandbox was started in, if any. With the cgroup, the job's limit is set and the whole
    tree is checked to be in it; the caller must `close()` the bound once the job is over
    (`prepared` is removed then, whichever mechanism applies).
    """
    choice = configured_choice()
    limit = memory_mb * _MB
    if choice == "watchdog":
        _log_once("watchdog", logging.INFO, "sandbox memory: %s=watchdog; each job's total "
                  "is bounded by the watchdog", SETTING)
        return JobBound("watchdog", memory_mb, watchdog=Watchdog(root_pid, limit),
                        spare=prepared)
    found = _host_cgroup()
    cgroup, problem = prepared, found if isinstance(found, str) else ""
    if cgroup is None and isinstance(found, CgroupParent):
        try:
            cgroup = JobCgroup(found)
        except OSError as exc:
            problem = f"could not create the job's memory cgroup under {found.path}: {exc}"
    if cgroup is None:
        if choice == "cgroup":
            raise SandboxError(f"{SETTING}=cgroup, but this host gives the sandbox no usable "
                               f"memory cgroup: {problem}")
        level = logging.WARNING if isinstance(found, CgroupParent) else logging.INFO
        _log_once(f"watchdog: {problem}", level, "sandbox memory: no usable memory cgroup "
                  "(%s); each job's total is bounded by the watchdog", problem)
        return JobBound("watchdog", memory_mb, watchdog=Watchdog(root_pid, limit))
    try:
        cgroup.set_limit(limit)
        cgroup.adopt(root_pid)
    except SandboxError:
        cgroup.remove()
        raise
    _log_once("cgroup", logging.INFO, "sandbox memory: each job's total is bounded by a "
              "memory cgroup (%s)", cgroup.path.parent)
    return JobBound("cgroup", memory_mb, cgroup=cgroup)


def _log_once(key: str, level: int, message: str, *args: object) -> None:
    with _logged_lock:
        if key in _logged:
            return
        _logged.add(key)
    logger.log(level, message, *args)


def exceeded_note(limit_mb: int) -> str:
    """The line added to the job's stderr when its total went over the limit."""
    return (f"sandbox: memory limit exceeded: the job's processes together used more than "
            f"{limit_mb} MB, the memory limit for the whole job; it was stopped\n")
