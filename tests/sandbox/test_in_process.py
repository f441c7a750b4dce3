"""A Python job run by the prepared sandbox's own interpreter (`run(..., in_process=True)`):
the same job as `python -I -S -B script`, under the same limits and isolation, without a
second interpreter start."""

from __future__ import annotations

import importlib.util
import json
import marshal

import pytest

from autocoder.sandbox import Limits, SandboxError, bwrap, launcher, run
from tests.sandbox.conftest import HOSTILE

COMMAND = ["python", "-I", "-S", "-B", "job.py"]

PROBE = """import json, os, resource, socket, sys
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    network = "reachable"
except OSError as exc:
    network = exc.strerror or str(exc)
print(json.dumps({
    "argv": sys.argv, "name": __name__, "file": __file__,
    "isolated": sys.flags.isolated, "no_site": sys.flags.no_site,
    "no_bytecode": sys.dont_write_bytecode, "cwd": os.getcwd(), "uid": os.getuid(),
    "nproc": resource.getrlimit(resource.RLIMIT_NPROC)[0],
    "cpu": resource.getrlimit(resource.RLIMIT_CPU)[0],
    "stdin": sys.stdin.read(), "network": network,
    "host_files": os.path.exists("/etc/passwd") or os.path.exists("/home"),
}))
"""


def test_the_script_runs_as_python_would_under_the_jobs_limits(host_guard: None) -> None:
    result = run({"job.py": PROBE}, [*COMMAND, "one", "two"], HOSTILE, in_process=True)
    assert result.exit_code == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["argv"] == ["job.py", "one", "two"]
    assert (seen["name"], seen["file"]) == ("__main__", "job.py")
    assert (seen["isolated"], seen["no_site"], seen["no_bytecode"]) == (1, 1, True)
    assert (seen["cwd"], seen["uid"]) == ("/workdir", 1000)
    assert (seen["nproc"], seen["cpu"]) == (HOSTILE.pids, HOSTILE.cpu_s)
    assert seen["stdin"] == ""
    assert seen["network"] == "Network is unreachable"
    assert seen["host_files"] is False


def test_exit_codes_and_uncaught_exceptions_are_the_jobs(host_guard: None) -> None:
    exits = run({"job.py": "import sys\nprint('bye')\nsys.exit(3)\n"}, COMMAND, HOSTILE,
                in_process=True)
    assert (exits.exit_code, exits.stdout) == (3, "bye\n")
    raises = run({"job.py": "raise RuntimeError('boom')\n"}, COMMAND, HOSTILE, in_process=True)
    assert raises.exit_code == 1
    assert raises.stderr.rstrip().endswith("RuntimeError: boom")
    missing = run({}, COMMAND, HOSTILE, in_process=True)
    assert missing.exit_code == 127 and "cannot execute job.py" in missing.stderr


def test_the_limits_still_stop_the_job(host_guard: None) -> None:
    spin = run({"job.py": "while True:\n    pass\n"}, COMMAND,
               Limits(timeout_s=10, cpu_s=1), in_process=True)
    assert spin.killed_reason == "cpu_limit"
    sleep = run({"job.py": "import time\ntime.sleep(30)\n"}, COMMAND,
                Limits(timeout_s=1), in_process=True)
    assert sleep.timed_out


def test_bytecode_of_this_python_is_loaded(host_guard: None) -> None:
    code = compile("print('from bytecode')\n", "/workdir/job.py", "exec")
    pyc = importlib.util.MAGIC_NUMBER + bytes(12) + marshal.dumps(code)
    result = run({"job.pyc": pyc}, [*COMMAND[:4], "job.pyc"], HOSTILE, in_process=True)
    assert (result.exit_code, result.stdout) == (0, "from bytecode\n"), result.stderr
    other = b"\x00\x00\r\n" + bytes(12) + marshal.dumps(code)
    with pytest.raises(SandboxError, match="bytecode of another Python version"):
        run({"job.pyc": other}, [*COMMAND[:4], "job.pyc"], HOSTILE, in_process=True)


def test_in_process_needs_the_interpreters_own_flags() -> None:
    with pytest.raises(ValueError, match="in_process needs"):
        run({"job.py": ""}, ["python", "job.py"], HOSTILE, in_process=True)
    with pytest.raises(ValueError, match="in_process needs"):
        run({}, ["python", "-I", "-S", "-B"], HOSTILE, in_process=True)


def test_the_job_message_names_the_script_not_an_interpreter() -> None:
    layout = bwrap.host_layout()
    message = bwrap.job_message([*COMMAND, "x"], HOSTILE, layout, in_process=True)
    fields = message.split(b"\x00")
    assert fields[0] == launcher.IN_PROCESS_TAG
    assert fields[1 + len(launcher.LIMIT_NAMES):] == [b"job.py", b"x"]
    assert int(fields[3]) == HOSTILE.cpu_s
