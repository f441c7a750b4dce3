"""The public `sandbox.run` contract on the real bwrap backend."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from autocoder.sandbox import Limits, RunResult, SandboxError, launcher, run, standby
from autocoder.sandbox import bwrap as bwrap_backend
from tests.sandbox.conftest import HOSTILE, our_workdirs, sandbox_descendants

QUICK = Limits(timeout_s=15)


def test_runs_the_command_with_the_files_as_its_workdir() -> None:
    files = {"pkg/__init__.py": "", "pkg/core.py": "VALUE = 41\n",
             "main.py": "import os, pkg.core\nprint(pkg.core.VALUE + 1, os.getcwd())\n"
                        "open('out/result.txt', 'w').write('done')\n",
             "out/.keep": b""}
    result = run(files, ["python", "main.py"], QUICK, collect=["out/*.txt"])
    assert isinstance(result, RunResult)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "42 /workdir\n", "")
    assert result.files == {"out/result.txt": b"done"}
    assert result.backend == "bwrap" and not result.timed_out and result.killed_reason is None


def test_as_dict_has_the_design_keys_and_no_files() -> None:
    result = run({}, ["python", "-c", "print('hi')"], QUICK, collect=["*"])
    data = result.as_dict()
    assert {"exit_code", "timed_out", "oom", "killed_reason", "stdout", "stderr",
            "stdout_truncated", "duration_ms", "backend"} <= set(data)
    assert "files" not in data
    assert data["stdout"] == "hi\n"


def test_nonzero_exit_is_a_result_not_an_error() -> None:
    result = run({}, ["python", "-c", "import sys; sys.exit(3)"], QUICK)
    assert result.exit_code == 3 and result.killed_reason is None


def test_missing_program_is_the_jobs_failure_not_the_sandboxes() -> None:
    result = run({}, ["no-such-program"], QUICK)
    assert result.exit_code not in (0, None)
    assert "no-such-program" in result.stderr


@pytest.mark.parametrize("name", ["../escape.py", "/etc/passwd", "a/../../b", "", "a\x00b"])
def test_file_paths_escaping_the_workdir_raise(name: str) -> None:
    with pytest.raises(ValueError):
        run({name: "x"}, ["python", "-c", "pass"], QUICK)
    assert our_workdirs() == []


def test_a_path_that_is_both_file_and_directory_raises() -> None:
    with pytest.raises(ValueError, match="cannot write"):
        run({"a": "file", "a/b": "inside"}, ["python", "-c", "pass"], QUICK)
    assert our_workdirs() == []


def test_collect_patterns_escaping_the_workdir_raise() -> None:
    with pytest.raises(ValueError):
        run({}, ["python", "-c", "pass"], QUICK, collect=["../*"])


def test_empty_command_raises() -> None:
    with pytest.raises(ValueError):
        run({}, [], QUICK)


def test_files_larger_than_the_workdir_raise_and_leave_nothing() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        run({"big.bin": b"x" * (9 << 20)}, ["python", "-c", "pass"], HOSTILE)
    assert our_workdirs() == []


def test_collect_budget_is_respected() -> None:
    source = "open('a.txt', 'w').write('a' * 40_000)\nopen('b.txt', 'w').write('b' * 40_000)\n"
    result = run({"job.py": source}, ["python", "job.py"], HOSTILE, collect=["*.txt"])
    assert list(result.files) == ["a.txt"]
    assert result.files_omitted == ["b.txt (over the 64 KB collect budget)"]


def test_cancel_check_kills_the_whole_run() -> None:
    started = time.monotonic()
    result = run({}, ["python", "-c", "import time; time.sleep(60)"], QUICK,
                 cancel_check=lambda: time.monotonic() - started > 0.5)
    assert result.killed_reason == "cancelled" and not result.timed_out
    assert result.duration_ms < 3000
    assert sandbox_descendants() == [] and our_workdirs() == []


def test_workdir_is_removed_when_the_caller_raises_mid_run() -> None:
    def explode() -> bool:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run({}, ["python", "-c", "import time; time.sleep(60)"], QUICK, cancel_check=explode)
    assert sandbox_descendants() == [] and our_workdirs() == []


def test_concurrent_runs_keep_separate_process_limits() -> None:
    """A fork bomb in one worker thread does not starve a run in another thread."""
    results: dict[str, RunResult] = {}
    bomb = ("import os\nwhile True:\n    try:\n        os.fork()\n"
            "    except OSError:\n        pass\n")
    fan_out = ("import subprocess, sys\nprocs = [subprocess.Popen([sys.executable, '-c', "
               "'pass']) for _ in range(8)]\nprint(sum(p.wait() == 0 for p in procs))\n")

    def worker(name: str, source: str, limits: Limits) -> None:
        results[name] = run({"job.py": source}, ["python", "job.py"], limits)

    bomber = threading.Thread(target=worker, args=("bomb", bomb, HOSTILE))
    bomber.start()
    time.sleep(0.8)  # the bomb has filled its own process budget by now
    # The bomb also eats CPU: the normal run gets time to finish on a busy machine. Were the
    # process budget shared, its forks would fail at once instead, whatever the timeout.
    # A thread of its own, like a second worker thread: the main thread's namespace has served
    # the other hostile tests of this module.
    normal_run = threading.Thread(
        target=worker, args=("normal", fan_out, replace(HOSTILE, timeout_s=30, cpu_s=30)))
    normal_run.start()
    normal_run.join()
    bomber.join()
    normal = results["normal"]
    assert (normal.exit_code, normal.stdout) == (0, "8\n"), normal.stderr[-2000:]
    assert results["bomb"].timed_out
    assert sandbox_descendants() == []


def test_sandbox_failure_raises_sandbox_error(monkeypatch: pytest.MonkeyPatch) -> None:
    layout = bwrap_backend.host_layout()
    broken = bwrap_backend.HostLayout(
        binds=(*layout.binds, ("/nonexistent-autocoder-path", "/opt/missing")),
        symlinks=layout.symlinks, interpreter=layout.interpreter, bwrap=layout.bwrap)
    monkeypatch.setattr(bwrap_backend, "host_layout", lambda: broken)
    standby.release_all()  # the sandbox prepared by an earlier test was built before the break
    with pytest.raises(SandboxError, match="could not start"):
        run({}, ["python", "-c", "pass"], QUICK)
    assert our_workdirs() == []


def test_unknown_backend_is_a_sandbox_error() -> None:
    with pytest.raises(SandboxError, match="unknown sandbox backend"):
        run({}, ["python", "-c", "pass"], QUICK, backend="chroot")


def test_bwrap_command_line_unshares_everything_and_binds_read_only() -> None:
    layout = bwrap_backend.host_layout()
    argv = bwrap_backend.bwrap_argv(layout=layout, workdir_mb=64, workdir="/host/wd",
                                    userns_fd=7)
    joined = " ".join(argv)
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--die-with-parent", "--new-session", "--clearenv", "--proc /proc",
                 "--bind /host/wd /workdir", "--remount-ro /", "--userns 7"):
        assert flag in joined
    assert "--share-net" not in argv and "--bind / /" not in joined
    writable = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--bind"]
    assert writable == ["/host/wd"]
    assert all(not dest.startswith(("/home", "/work/main/autocoder")) and dest != "/root"
               for _src, dest in layout.binds)
    assert f"--size {64 * 1024 * 1024} --tmpfs /tmp" in joined
    # What runs inside is the launcher, which waits for the job and its limits.
    assert argv[argv.index("--uid"):][5:10] == [layout.interpreter, "-S", "-I", "-c",
                                                 Path(launcher.__file__).read_text()]


def test_job_message_carries_the_limits_and_the_argv() -> None:
    layout = bwrap_backend.host_layout()
    limits = Limits(memory_mb=100, pids=7, cpu_s=9, file_size_mb=3, open_files=50)
    message = bwrap_backend.job_message(["python", "-c", "print(1)\nprint(2)"], limits, layout)
    fields = message.split(b"\x00")
    mb = 1024 * 1024
    assert fields[0] == launcher.MESSAGE_TAG
    assert fields[1:7] == [str(v).encode() for v in (100 * mb, 7, 9, 10, 3 * mb, 50)]
    assert fields[7:] == [layout.interpreter.encode(), b"-c", b"print(1)\nprint(2)"]


def test_a_venv_under_tmp_is_bound_after_the_private_tmp_is_mounted() -> None:
    """A checkout under /tmp (a CI clone) keeps its interpreter visible in the sandbox: binds and
    symlinks below /tmp come after the private /tmp, which would otherwise hide them."""
    layout = bwrap_backend.HostLayout(
        binds=(("/usr", "/usr"), ("/tmp/ci/.venv", "/tmp/ci/.venv")),
        symlinks=(("python3.11", "/tmp/ci/.venv/bin/python"), ("usr/lib", "/lib")),
        interpreter="/tmp/ci/.venv/bin/python", bwrap="/usr/bin/bwrap")
    argv = bwrap_backend.bwrap_argv(layout=layout, workdir_mb=64, workdir="/host/wd",
                                    userns_fd=7)
    private_tmp = argv.index("/tmp", argv.index("--tmpfs", argv.index("/dev/shm")))
    assert argv.index("/tmp/ci/.venv") > private_tmp
    assert argv.index("/tmp/ci/.venv/bin/python") > private_tmp
    assert argv.index("/usr") < private_tmp and argv.index("/lib") < private_tmp
