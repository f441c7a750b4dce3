"""A job's memory is bounded in total, all of its processes together, not per process.

Real jobs in the real bwrap sandbox, once under each mechanism of memory.py: the memory
cgroup (skipped, with the reason, on a host that gives the sandbox none) and the watchdog
(forced with SANDBOX_MEMORY_BOUND=watchdog). RLIMIT_AS alone would let six processes of
300 MB each run under memory_mb=512: each stays below its own 512 MB address space.

The host is assumed to be busy (two shared cores): timeouts are generous and no test asserts
how fast the job was stopped, only how it ended.

The forking jobs run in a thread of their own, as in a fresh worker thread. RLIMIT_NPROC is
counted per worker thread's user namespace, and the main thread's namespace has served the
other sandbox tests: each prepared sandbox they discarded (standby.py kills bwrap first) can
leave the sandbox's init as a zombie that counts until the host's init reaps it, which some
hosts do only every few seconds.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autocoder.sandbox import Limits, RunResult, SandboxError, bwrap, memory, run, standby
from tests.sandbox.conftest import our_workdirs

pytestmark = pytest.mark.usefixtures("host_guard")

LIMITS = Limits(timeout_s=60, memory_mb=512, pids=32, cpu_s=60, output_kb=16, workdir_mb=8)

# argv: how many children, MB each (written, so that the pages are resident), seconds held.
FORKING_JOB = """\
import os, sys, time
count, mb, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
children = []
for number in range(count):
    pid = os.fork()
    if pid == 0:
        data = b"x" * (mb << 20)
        print("child", number, "holds", len(data) >> 20, "MB", flush=True)
        time.sleep(hold)
        os._exit(0)
    children.append(pid)
failed = sum(os.waitpid(pid, 0)[1] != 0 for pid in children)
print("children done, failed:", failed, flush=True)
"""


@pytest.fixture(params=["cgroup", "watchdog"])
def bound(request: pytest.FixtureRequest, settings: Any) -> str:
    """The mechanism under test, forced through SANDBOX_MEMORY_BOUND."""
    if request.param == "cgroup":
        problem = memory.cgroup_problem()
        if problem is not None:
            pytest.skip(f"this host gives the sandbox no usable memory cgroup: {problem}")
    settings.SANDBOX_MEMORY_BOUND = request.param
    assert memory.memory_bound_kind() == request.param
    return str(request.param)


@pytest.fixture(params=["prepared", "cold"])
def sandbox_start(request: pytest.FixtureRequest) -> str:
    """A sandbox prepared ahead (a worker's usual case) or built on the spot."""
    return str(request.param)


def in_a_worker_thread(start: str, job: Callable[[], RunResult]) -> RunResult:
    """`job()` in a new thread, in a sandbox prepared ahead or built on the spot; afterwards,
    the sandbox that thread prepared for its next run is gone too."""
    results: list[RunResult] = []
    errors: list[BaseException] = []
    before = set(map(id, standby.every_prepared()))  # the main thread's, which stays

    def worker() -> None:
        try:
            if start == "prepared":
                standby.prepare(LIMITS, bwrap.new_standby)
                prepared = standby.prepared()
                assert prepared is not None
                prepared.wait_ready()
            results.append(job())
        except BaseException as exc:  # noqa: BLE001 (raised again in the test's thread)
            errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    gc.collect()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (
            set(map(id, standby.every_prepared())) - before or our_workdirs() or job_cgroups()):
        time.sleep(0.05)
    if errors:
        raise errors[0]
    return results[0]


def job_cgroups() -> list[Path]:
    """This process's job cgroups, apart from those of sandboxes prepared for a next run
    (each is started in the cgroup of the job it will run)."""
    waiting = {bwrap.prepared_cgroup(prepared) for prepared in standby.every_prepared()}
    return [path for path in memory.job_cgroups() if path not in waiting]


class CgroupsSeen:
    """A cancel_check that never cancels: it records the job cgroups that exist while the
    job runs, and how many processes each one holds."""

    def __init__(self) -> None:
        self.samples: list[list[tuple[str, int]]] = []

    def __call__(self) -> bool:
        sample = []
        for path in job_cgroups():
            try:
                sample.append((path.name, len((path / "cgroup.procs").read_text().split())))
            except OSError:
                continue
        self.samples.append(sample)
        return False

    def names(self) -> set[str]:
        return {name for sample in self.samples for name, _ in sample}


def forking_job(count: int, mb: int, hold_s: float, *, start: str = "cold",
                limits: Limits = LIMITS,
                cancel_check: Callable[[], bool] | None = None) -> RunResult:
    argv = ["python", "job.py", str(count), str(mb), str(hold_s)]
    return in_a_worker_thread(start, lambda: run({"job.py": FORKING_JOB}, argv, limits,
                                                 cancel_check=cancel_check))


def test_six_processes_over_the_limit_together_are_stopped(bound: str, sandbox_start: str) -> None:
    seen = CgroupsSeen()
    result = forking_job(6, 300, 60, start=sandbox_start, cancel_check=seen)
    assert result.killed_reason == "memory_limit" and result.oom, result.as_dict()
    assert not result.timed_out and result.exit_code is None
    assert "children done" not in result.stdout
    assert "memory limit exceeded" in result.stderr
    assert "more than 512 MB, the memory limit for the whole job" in result.stderr
    assert "MemoryError" not in result.stderr  # no single process reached its own limit
    if bound == "cgroup":
        assert len(seen.names()) == 1, seen.samples  # one cgroup, the job's
        assert any(procs >= 3 for sample in seen.samples for _, procs in sample), seen.samples
    else:
        assert seen.names() == set()
    assert job_cgroups() == []


def test_a_modest_job_of_several_processes_passes(bound: str, sandbox_start: str) -> None:
    seen = CgroupsSeen()
    result = forking_job(3, 50, 2, start=sandbox_start, cancel_check=seen)
    assert result.exit_code == 0 and result.killed_reason is None, result.as_dict()
    assert not result.oom
    assert result.stdout.count("holds 50 MB") == 3
    assert "children done, failed: 0" in result.stdout
    assert "memory limit" not in result.stderr
    assert len(seen.names()) == (1 if bound == "cgroup" else 0), seen.samples
    assert job_cgroups() == []


def test_one_process_over_the_limit_still_meets_its_address_space_limit(bound: str) -> None:
    result = run({"job.py": "data = bytearray(1024 * 1024 * 1024)\nprint('allocated')\n"},
                 ["python", "job.py"], LIMITS)
    assert result.oom and result.killed_reason == "memory_limit"
    assert "MemoryError" in result.stderr and "allocated" not in result.stdout


@pytest.mark.parametrize("ending", ["timeout", "cancelled"])
def test_the_job_cgroup_is_removed_when_the_job_is_killed(bound: str, ending: str) -> None:
    seen = CgroupsSeen()
    cancel: Callable[[], bool] = seen
    if ending == "cancelled":
        cancel = lambda: seen() or len(seen.samples) > 10  # noqa: E731 (about a second in)
    result = forking_job(3, 10, 600, limits=Limits(timeout_s=3, memory_mb=512, pids=32,
                                                   workdir_mb=8), cancel_check=cancel)
    assert result.killed_reason == ending, result.as_dict()
    assert not result.oom
    assert len(seen.names()) == (1 if bound == "cgroup" else 0), seen.samples
    assert job_cgroups() == []


def test_memory_bound_kind_says_which_mechanism_applies(settings: Any) -> None:
    settings.SANDBOX_MEMORY_BOUND = "auto"
    expected = "cgroup" if memory.cgroup_problem() is None else "watchdog"
    assert memory.memory_bound_kind() == expected
    assert memory.memory_bound_summary().startswith(expected + ":")
    settings.SANDBOX_MEMORY_BOUND = "watchdog"
    assert memory.memory_bound_kind() == "watchdog"


def test_an_unknown_memory_bound_setting_is_a_sandbox_error(settings: Any) -> None:
    settings.SANDBOX_MEMORY_BOUND = "per-process"
    with pytest.raises(SandboxError, match="SANDBOX_MEMORY_BOUND must be one of"):
        run({}, ["python", "-c", "pass"], LIMITS)


def test_job_cgroups_left_by_a_dead_portal_process_are_swept() -> None:
    problem = memory.cgroup_problem()
    if problem is not None:
        pytest.skip(f"this host gives the sandbox no usable memory cgroup: {problem}")
    found = memory._host_cgroup()
    assert isinstance(found, memory.CgroupParent)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    assert not Path(f"/proc/{dead_pid}").exists()
    stale = found.path / f"{memory.JOB_PREFIX}{dead_pid}-1"
    os.mkdir(stale)
    mine = found.path / f"{memory.JOB_PREFIX}{os.getpid()}-stale-test"
    os.mkdir(mine)
    try:
        memory._sweep_stale(found)
        assert not stale.exists()
        assert mine.exists()  # a live process's cgroup is its own to remove
    finally:
        for path in (stale, mine):
            if path.exists():
                os.rmdir(path)


def test_a_prepared_sandbox_that_runs_no_job_leaves_no_cgroup(settings: Any) -> None:
    problem = memory.cgroup_problem()
    if problem is not None:
        pytest.skip(f"this host gives the sandbox no usable memory cgroup: {problem}")
    settings.SANDBOX_MEMORY_BOUND = "cgroup"
    standby.release_all()
    gc.collect()
    standby.prepare(LIMITS, bwrap.new_standby)
    prepared = standby.prepared()
    assert prepared is not None
    prepared.wait_ready()
    path = bwrap.prepared_cgroup(prepared)
    assert path is not None and memory.job_cgroups() == [path]
    # started in it: bwrap, its init and the launcher
    assert len((path / "cgroup.procs").read_text().split()) >= 3
    del prepared
    standby.release_all()
    gc.collect()
    assert memory.job_cgroups() == []
