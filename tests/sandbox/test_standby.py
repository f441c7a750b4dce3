"""The sandbox prepared for a worker thread's next run (standby.py), on the real bwrap backend.

Preparing ahead must change when the set-up happens and nothing else: every job still gets
namespaces, a workdir and a /tmp of its own, under its own hard limits.
"""

from __future__ import annotations

import gc
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autocoder.sandbox import Limits, SandboxError, bwrap, launcher, run, standby
from autocoder.sandbox.workdir import Workdir
from tests.sandbox.conftest import our_workdirs, sandbox_descendants

QUICK = Limits(timeout_s=15)


@pytest.fixture(autouse=True)
def nothing_prepared() -> Iterator[None]:
    standby.release_all()
    yield
    standby.release_all()


def ready_prepared() -> standby.Standby:
    prepared = standby.prepared()
    assert prepared is not None, "no sandbox was prepared for the next run"
    prepared.wait_ready()
    return prepared


def test_a_run_prepares_the_next_sandbox_and_the_next_run_uses_it() -> None:
    assert run({}, ["python", "-c", "pass"], QUICK).exit_code == 0
    prepared = ready_prepared()
    result = run({}, ["python", "-c", "print('second')"], QUICK)
    assert (result.exit_code, result.stdout) == (0, "second\n")
    assert prepared.proc.returncode is not None, "the prepared sandbox was not the one used"
    assert standby.prepared() not in (None, prepared)


def test_nothing_of_a_job_reaches_the_next_one() -> None:
    leave_behind = (
        "import os, subprocess, sys\n"
        "open('left.txt', 'w').write('secret')\n"
        "open('/tmp/left.txt', 'w').write('secret')\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],\n"
        "                 start_new_session=True)\n"
    )
    assert run({"job.py": leave_behind}, ["python", "job.py"], QUICK).exit_code == 0
    ready_prepared()
    look = ("import os\n"
            "print(sorted(os.listdir('.')))\n"
            "print(os.path.exists('/tmp/left.txt'))\n"
            "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n")
    result = run({"look.py": look}, ["python", "look.py"], QUICK)
    workdir, tmp_file_left, processes = result.stdout.splitlines()
    # (/tmp is not empty when the checkout itself lives under /tmp: its venv is bound there.)
    assert (workdir, tmp_file_left) == ("['look.py']", "False")
    # bwrap's init, and the job itself: the first job's sleeper is gone with its namespace.
    assert len(processes.strip("[]").split(", ")) == 2, processes


def test_the_limits_are_the_jobs_own_and_cannot_be_raised() -> None:
    limits = Limits(timeout_s=15, memory_mb=300, pids=20, cpu_s=7, file_size_mb=5,
                    open_files=40)
    probe = ("import resource as r\n"
             "for name in ('AS', 'NPROC', 'CPU', 'FSIZE', 'NOFILE', 'CORE'):\n"
             "    print(name, *r.getrlimit(getattr(r, 'RLIMIT_' + name)))\n"
             "try:\n"
             "    r.setrlimit(r.RLIMIT_NPROC, (1000, 1000))\n"
             "except (ValueError, OSError) as exc:\n"
             "    print('refused', type(exc).__name__)\n")
    run({}, ["python", "-c", "pass"], limits)  # the second run takes the prepared path
    ready_prepared()
    result = run({"probe.py": probe}, ["python", "probe.py"], limits)
    mb = 1024 * 1024
    assert result.stdout.splitlines() == [
        f"AS {300 * mb} {300 * mb}", "NPROC 20 20", "CPU 7 8", f"FSIZE {5 * mb} {5 * mb}",
        "NOFILE 40 40", "CORE 0 0", "refused ValueError"]


def test_the_job_reads_an_empty_stdin_not_the_launchers_pipe() -> None:
    run({}, ["python", "-c", "pass"], QUICK)
    ready_prepared()
    result = run({}, ["python", "-c", "import sys; print(repr(sys.stdin.read()))"], QUICK)
    assert result.stdout == "''\n"


def test_a_prepared_sandbox_that_died_is_replaced() -> None:
    run({}, ["python", "-c", "pass"], QUICK)
    prepared = ready_prepared()
    os.killpg(prepared.proc.pid, 9)
    prepared.proc.wait()
    result = run({}, ["python", "-c", "print('still works')"], QUICK)
    assert (result.exit_code, result.stdout) == (0, "still works\n")


def test_a_prepared_sandbox_with_another_workdir_size_is_not_used() -> None:
    run({}, ["python", "-c", "pass"], Limits(timeout_s=15, workdir_mb=8))
    small = ready_prepared()
    statvfs = "import os; s = os.statvfs('.'); print(s.f_blocks * s.f_frsize // 2**20)"
    result = run({}, ["python", "-c", statvfs], Limits(timeout_s=15, workdir_mb=32))
    assert result.stdout == "32\n"
    assert small.proc.returncode is not None and our_workdirs() == []


def test_a_failure_to_prepare_the_next_sandbox_keeps_the_runs_result(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    built = []

    def second_build_fails(workdir_mb: int) -> standby.Standby:
        built.append(workdir_mb)
        if len(built) > 1:
            raise SandboxError("cannot create the sandbox user namespace: Resource temporarily "
                               "unavailable")
        return real_build(workdir_mb)

    real_build = bwrap.new_standby
    monkeypatch.setattr(bwrap, "new_standby", second_build_fails)
    result = run({}, ["python", "-c", "print('kept')"], QUICK)
    assert (result.exit_code, result.stdout) == (0, "kept\n")
    assert len(built) == 2 and standby.prepared() is None
    assert "could not prepare the next sandbox" in caplog.text
    monkeypatch.setattr(bwrap, "new_standby", real_build)
    assert run({}, ["python", "-c", "print('next')"], QUICK).stdout == "next\n"


def test_a_malformed_job_message_is_the_sandboxes_failure() -> None:
    prepared = bwrap.new_standby(8)
    try:
        prepared.wait_ready()
        proc = prepared.hand_over(b"not a job")
        assert proc.stderr is not None
        assert proc.wait(timeout=10) == 1
        assert proc.stderr.read().decode().startswith("launcher: malformed job message")
    finally:
        prepared.release()


def test_a_sandbox_that_cannot_start_says_why() -> None:
    def start_broken(workdir: Workdir) -> subprocess.Popen[bytes]:
        return subprocess.Popen(["/bin/sh", "-c", "echo 'bwrap: cannot do that' >&2; exit 1"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    broken = standby.Standby(Workdir(size_mb=8, owner=None, use_tmpfs=False), start_broken)
    with pytest.raises(SandboxError, match="could not start: bwrap: cannot do that"):
        broken.wait_ready()
    broken.release()
    assert our_workdirs() == []


def test_a_finished_worker_thread_leaves_no_prepared_sandbox() -> None:
    def worker() -> None:
        run({}, ["python", "-c", "pass"], QUICK)
        ready_prepared()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    gc.collect()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (standby.every_prepared() or our_workdirs()):
        time.sleep(0.05)
    assert standby.every_prepared() == [] and our_workdirs() == []
    assert sandbox_descendants() == []


def test_a_running_job_is_never_taken_for_an_idle_prepared_sandbox() -> None:
    """Leak checks leave idle prepared sandboxes out; a job handed one must still be seen.

    The job runs in this thread's prepared sandbox; a watcher thread looks for it with the
    leak check and stops the job once it has looked (or after 20 s)."""
    run({}, ["python", "-c", "pass"], QUICK)
    prepared = ready_prepared()
    looked, seen = threading.Event(), []

    def watch() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not seen:
            seen.extend(sandbox_descendants())
            time.sleep(0.05)
        looked.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    result = run({}, ["python", "-c", "import time; time.sleep(60)"], Limits(timeout_s=30),
                 cancel_check=looked.is_set)
    watcher.join()
    assert prepared.handed_over and result.killed_reason == "cancelled", result
    assert seen, "the running job was hidden as a prepared sandbox"


def test_the_launcher_is_standalone() -> None:
    """It runs inside with `-S -I`, where nothing of the project is importable."""
    source = Path(launcher.__file__).read_text()
    imports = [line.split()[1] for line in source.splitlines()
               if line.startswith(("import ", "from "))]
    assert set(imports) <= {"__future__", "os", "resource", "sys"}
