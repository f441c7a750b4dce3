"""Hostile jobs in the real bwrap sandbox: each ends safely, says why, and leaves the host as
it was (the `host_guard` fixture checks that, then checks that the next run works).

Every test runs on each backend: bwrap in a sandbox prepared ahead for the run (a worker's
usual case) and in one built on the spot (a worker thread's first run); Docker with runc and
with gVisor (runsc) when an engine, the image and the runtime are there (tests/sandbox/
backends.py; otherwise those variants skip and say how to enable them)."""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from autocoder.sandbox import bwrap, run, standby
from tests.sandbox.backends import use_backend
from tests.sandbox.conftest import HOSTILE

pytestmark = pytest.mark.usefixtures("sandbox_start", "host_guard")


@pytest.fixture(params=["prepared", "cold", "docker", "runsc"], autouse=True)
def sandbox_start(request: pytest.FixtureRequest, settings: Any) -> str:
    standby.release_all()
    if request.param in ("docker", "runsc"):
        use_backend(request.param, settings)
        return str(request.param)
    settings.SANDBOX_BACKEND = "bwrap"
    if request.param == "prepared":
        standby.prepare(HOSTILE, bwrap.new_standby)
        prepared = standby.prepared()
        assert prepared is not None
        prepared.wait_ready()
    return str(request.param)


def job(source: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return run({"job.py": source}, ["python", "job.py"], HOSTILE, **kwargs)  # type: ignore[arg-type]


def test_infinite_loop_is_killed_at_the_wall_clock_timeout() -> None:
    result = job("while True:\n    pass\n")
    assert result.timed_out and result.killed_reason == "timeout"
    assert result.exit_code is None
    assert 2900 <= result.duration_ms < 6000


def test_sleeping_forever_is_killed_at_the_timeout() -> None:
    result = job("import time\ntime.sleep(10_000)\n")
    assert result.timed_out and result.killed_reason == "timeout"


def test_allocating_past_the_memory_limit_is_reported_as_oom() -> None:
    result = job("data = bytearray(1024 * 1024 * 1024)\nprint('allocated')\n")
    assert result.oom and result.killed_reason == "memory_limit"
    assert "allocated" not in result.stdout
    assert "MemoryError" in result.stderr


def test_fork_bomb_stays_inside_the_process_limit() -> None:
    source = ("import os\ncount = 0\nwhile True:\n    try:\n        os.fork()\n"
              "        count += 1\n    except OSError:\n        pass\n")
    result = job(source)
    assert result.timed_out and result.killed_reason == "timeout"


def test_popen_loop_is_refused_new_processes_at_the_limit() -> None:
    source = ("import subprocess, sys\nchildren = []\nwhile True:\n    try:\n"
              "        children.append(subprocess.Popen([sys.executable, '-c', "
              "'import time; time.sleep(60)']))\n"
              "    except OSError as exc:\n        print('refused after', len(children), exc)\n"
              "        break\n")
    result = job(source)
    assert "refused after" in result.stdout and "Resource temporarily unavailable" in result.stdout
    started = int(result.stdout.split("refused after", 1)[1].split()[0])
    assert started < HOSTILE.pids


def test_printing_forever_is_capped_and_stopped() -> None:
    result = job("while True:\n    print('x' * 1000)\n")
    assert result.stdout_truncated
    assert len(result.stdout.encode()) <= HOSTILE.output_kb * 1024
    assert result.killed_reason in ("output_limit", "timeout")


def test_terabyte_sparse_file_is_refused() -> None:
    result = job("with open('big', 'wb') as f:\n    f.truncate(1 << 40)\n")
    assert result.exit_code == 1 and result.killed_reason == "file_size_limit"
    assert "File too large" in result.stderr


def test_filling_the_workdir_stops_at_its_size() -> None:
    source = ("i = 0\nwhile True:\n    with open(f'fill{i}', 'wb') as f:\n"
              "        f.write(b'x' * (1 << 20))\n    i += 1\n")
    result = job(source)
    assert result.exit_code == 1 and result.killed_reason == "workdir_full"
    assert "No space left on device" in result.stderr


def test_private_tmp_and_shm_are_size_capped_too() -> None:
    source = ("import os\nfor d in ('/tmp', '/dev/shm'):\n    try:\n"
              "        with open(os.path.join(d, 'f'), 'wb') as f:\n"
              "            for _ in range(64):\n                f.write(b'x' * (1 << 20))\n"
              "        print(d, 'FILLED')\n    except OSError as exc:\n"
              "        print(d, 'refused', exc.errno)\n")
    result = job(source)
    assert "FILLED" not in result.stdout
    assert result.stdout.count("refused") == 2


def test_environment_of_the_portal_is_invisible(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"portal-secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("AUTOCODER_TEST_SECRET", secret)
    source = ("import os, glob\nprint(dict(os.environ))\n"
              "for path in glob.glob('/proc/*/environ'):\n"
              "    try:\n        print(path, open(path, 'rb').read())\n"
              "    except OSError as exc:\n        print(path, exc)\n")
    result = job(source)
    assert result.exit_code == 0
    assert "/proc/1/environ" in result.stdout
    assert secret not in result.stdout and "AUTOCODER_TEST_SECRET" not in result.stdout
    assert "DATABASE_URL" not in result.stdout and "DJANGO_SETTINGS_MODULE" not in result.stdout


def test_host_files_outside_the_workdir_cannot_be_read(sandbox_start: str) -> None:
    secret_file = Path.home() / f".autocoder-sandbox-test-{uuid.uuid4().hex}"
    secret_file.write_text("home secret")
    secret_file.chmod(0o644)  # readable by anyone on the host: only the sandbox stops it
    # a container has an /etc of its own (the image's passwd, hostname "sandbox"): not the host's
    own_etc = [] if sandbox_start in ("docker", "runsc") else ["/etc/passwd", "/etc/hostname"]
    try:
        paths = [str(secret_file), "/etc/shadow", *own_etc,
                 "/work/main/manage.py", "/work/main/config/settings.py",
                 os.path.abspath(".env")]
        source = (f"paths = {paths!r}\nfor path in paths:\n    try:\n"
                  "        print(path, 'READ', open(path).read()[:20])\n"
                  "    except OSError as exc:\n        print(path, 'denied', type(exc).__name__)\n")
        result = job(source)
    finally:
        secret_file.unlink()
    assert result.exit_code == 0
    assert "READ" not in result.stdout and "home secret" not in result.stdout
    assert result.stdout.count("denied") == len(paths)


def test_home_and_project_directories_show_only_the_interpreter(sandbox_start: str) -> None:
    from django.conf import settings

    from autocoder.sandbox.bwrap import host_layout

    watched = [str(Path.home()), str(settings.BASE_DIR)]
    # bwrap binds the host's runtime read-only; a container has none of the host's files
    dests = [dest for _src, dest in host_layout().binds] if sandbox_start in (
        "prepared", "cold") else []
    expected = {
        directory: sorted({Path(d).relative_to(directory).parts[0] for d in dests
                           if d.startswith(directory + "/")})
        for directory in watched
    }
    source = (f"import os\nfor d in {watched!r}:\n"
              "    try:\n        print(d, sorted(os.listdir(d)) if os.path.isdir(d) else [])\n"
              "    except PermissionError:\n        print(d, [])\n")
    result = job(source)
    for directory in watched:
        assert f"{directory} {expected[directory]}" in result.stdout
        assert len(os.listdir(directory)) > len(expected[directory])  # the host has more


def test_writes_outside_the_workdir_fail() -> None:
    targets = ["/x", "/etc/x", "/usr/x", "/usr/lib/x", str(Path.home() / "x"), "/root/x",
               "/work/main/.venv/x", "/proc/x", "/dev/x"]
    source = (f"for path in {targets!r}:\n    try:\n        open(path, 'w').write('x')\n"
              "        print(path, 'WROTE')\n    except OSError as exc:\n"
              "        print(path, 'refused', type(exc).__name__)\n"
              "open('inside.txt', 'w').write('ok')\n")
    result = job(source, collect=["inside.txt"])
    assert "WROTE" not in result.stdout
    assert result.stdout.count("refused") == len(targets)
    assert result.files == {"inside.txt": b"ok"}
    for target in ("/x", "/etc/x", "/usr/x", str(Path.home() / "x")):
        assert not os.path.exists(target)


def test_sockets_and_name_resolution_fail() -> None:
    source = ("import socket\ntry:\n    socket.create_connection(('1.1.1.1', 80), timeout=1)\n"
              "    print('CONNECTED')\nexcept OSError as exc:\n    print('connect', exc)\n"
              "try:\n    print(socket.getaddrinfo('pypi.org', 443))\nexcept OSError as exc:\n"
              "    print('resolve', exc)\n"
              "import os\nprint('interfaces', sorted(os.listdir('/sys/class/net')) "
              "if os.path.exists('/sys/class/net') else 'no /sys')\n")
    result = job(source)
    assert "CONNECTED" not in result.stdout
    assert ("Network is unreachable" in result.stdout
            or "No route to host" in result.stdout)  # gVisor's network stack says this
    assert "resolve" in result.stdout and "pypi.org" not in result.stdout.split("resolve", 1)[1]


def test_segfault_through_ctypes_is_reported() -> None:
    result = job("import ctypes\nctypes.string_at(0)\n")
    assert result.exit_code == 139 and result.killed_reason == "signal:SIGSEGV"


def test_symlink_to_a_host_file_is_not_collected() -> None:
    source = ("import os\nos.symlink('/etc/passwd', 'leak.txt')\n"
              "os.symlink('/root', 'rootdir')\nos.link('job.py', 'hard.txt')\n"
              "open('real.txt', 'w').write('mine')\n")
    result = job(source, collect=["*.txt", "rootdir/**"])
    # a hard link to the job's own file is a regular file of the workdir: collected
    assert result.files == {"real.txt": b"mine", "hard.txt": source.encode()}
    assert b"root:" not in b"".join(result.files.values())
    assert any(item.startswith("leak.txt") for item in result.files_omitted)


def test_null_bytes_and_invalid_utf8_in_the_output_are_made_safe() -> None:
    source = ("import sys\nsys.stdout.buffer.write(b'a\\x00b\\xff\\xfe c\\n')\n"
              "sys.stderr.buffer.write(b'\\x00\\xc3(')\n")
    result = job(source)
    assert result.exit_code == 0
    assert "\x00" not in result.stdout and "\x00" not in result.stderr
    assert result.stdout == "a\ufffdb\ufffd\ufffd c\n"
    result.stdout.encode("utf-8")  # storable as text anywhere, PostgreSQL included


def test_thousand_deep_directories_are_handled_and_removed() -> None:
    source = ("import os\nfor _ in range(1000):\n    os.mkdir('d')\n    os.chdir('d')\n"
              "open('leaf.txt', 'w').write('deep')\nprint('built')\n")
    result = job(source, collect=["**/*.txt"])
    assert result.stdout == "built\n"
    assert "leaf.txt" not in "".join(result.files)  # beyond the collection depth


def test_nested_user_namespaces_and_privileges_are_unavailable(sandbox_start: str) -> None:
    source = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "print('ids', os.getresuid(), os.getgroups())\n"
              "status = open('/proc/self/status').read().splitlines()\n"
              "print([l for l in status if l.startswith(('CapEff', 'CapPrm', 'NoNewPrivs'))])\n"
              "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n")
    result = job(source)
    assert "CapEff:\\t0000000000000000" in result.stdout
    if sandbox_start in ("prepared", "cold"):
        assert "ids (1000, 1000, 1000) []" in result.stdout
    else:  # the image's `sandbox` user, in its own group only
        assert "ids (10001, 10001, 10001) [10001]" in result.stdout
    if sandbox_start == "runsc":
        # gVisor's own kernel (the Sentry) gives the job a user namespace of its own making:
        # the host kernel's namespace code is what stays out of reach
        assert "unshare 0 0" in result.stdout
    else:
        assert "unshare -1" in result.stdout and "NoNewPrivs:\\t1" in result.stdout


def test_proc_and_sys_show_the_job_only_and_refuse_the_kernels_controls(
        sandbox_start: str) -> None:
    source = (
        "import os\nseen = []\nfor pid in os.listdir('/proc'):\n    if pid.isdigit():\n"
        "        try:\n            seen.append(open(f'/proc/{pid}/cmdline', 'rb').read())\n"
        "        except OSError:\n            pass\n"
        "print('pytest seen', any(b'pytest' in c for c in seen), 'processes', len(seen))\n"
        "for path in ('/proc/sysrq-trigger', '/proc/sys/kernel/core_pattern',\n"
        "             '/proc/sys/vm/drop_caches', '/sys/kernel/uevent_helper',\n"
        "             '/sys/fs/cgroup/release_agent', '/sys/fs/cgroup/memory/release_agent'):\n"
        "    try:\n        with open(path, 'w') as f:\n            f.write('1')\n"
        "        print(path, 'WROTE')\n"
        "    except OSError as exc:\n        print(path, 'refused', exc.errno)\n"
        "for path in ('/proc/kcore', '/sys/firmware/dmi/tables/DMI',\n"
        "             '/sys/class/dmi/id/product_uuid', '/sys/kernel/debug/sched_debug'):\n"
        "    try:\n        open(path, 'rb').read(16)\n        print(path, 'READ')\n"
        "    except OSError as exc:\n        print(path, 'refused', exc.errno)\n"
        "try:\n    with open('/proc/self/oom_score_adj', 'w') as f:\n        f.write('-1000')\n"
        "    print('oom WROTE')\n"
        "except OSError as exc:\n    print('oom refused', exc.errno)\n")
    result = job(source)
    assert result.exit_code == 0, result.stderr
    assert "pytest seen False" in result.stdout  # the portal's processes are out of sight
    assert int(result.stdout.split("processes ", 1)[1].split()[0]) < 10
    if sandbox_start == "runsc":  # gVisor's kernel keeps its own score; the host's is untouched
        result.stdout = result.stdout.replace("oom WROTE", "oom refused (gVisor's own)")
    assert "WROTE" not in result.stdout and "READ" not in result.stdout
    assert result.stdout.count("refused") == 11


def test_a_detached_process_does_not_outlive_its_job() -> None:
    token = uuid.uuid4().hex
    source = ("import os, subprocess, sys\n"
              f"sleeper = ['python', '-c', 'import time; time.sleep(60)  # {token}']\n"
              "subprocess.Popen(sleeper, start_new_session=True, stdin=subprocess.DEVNULL,\n"
              "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
              "if os.fork() == 0:\n    os.setsid()\n"
              "    if os.fork() == 0:\n        os.closerange(0, 3)\n"
              "        os.execvp('python', sleeper)\n    os._exit(0)\n"
              "os.wait()\nprint('detached')\n")
    result = job(source)
    assert result.stdout == "detached\n" and not result.timed_out
    time.sleep(0.3)
    survivors = [p.pid for p in psutil.process_iter(["cmdline"])
                 if token in " ".join(p.info["cmdline"] or [])]
    assert survivors == [], "a detached process outlived its job on the host"


def test_ptrace_reaches_no_process_outside_the_job() -> None:
    host_pid = os.getpid()
    source = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, "
              "ctypes.c_void_p]\n"
              f"print('attach', libc.ptrace(16, {host_pid}, None, None), ctypes.get_errno())\n")
    result = job(source)
    assert f"attach -1 {3}" in result.stdout or "attach -1 1" in result.stdout, result.stdout
    tracer = [line for line in Path("/proc/self/status").read_text().splitlines()
              if line.startswith("TracerPid")]
    assert tracer == ["TracerPid:\t0"]


def test_a_job_cannot_see_or_touch_another_running_job() -> None:
    token = uuid.uuid4().hex
    limits = HOSTILE.__class__(**{**HOSTILE.__dict__, "timeout_s": 15})
    first: list[Any] = []
    source = (f"import time\nopen('mine-{token}.txt', 'w').write('secret')\n"
              f"print('from', time.time())\ntime.sleep(6)  # {token}\n"
              "print('until', time.time())\n")
    thread = threading.Thread(target=lambda: first.append(
        run({"job.py": source}, ["python", "job.py"], limits)))
    thread.start()
    time.sleep(2.5)
    looker = (
        "import os, time\nhits = []\nfor pid in os.listdir('/proc'):\n    if pid.isdigit():\n"
        "        try:\n            cmd = open(f'/proc/{pid}/cmdline', 'rb').read()\n"
        "        except OSError:\n            continue\n"
        f"        if b'{token}' in cmd:\n            hits.append(pid)\n"
        "print('at', time.time())\nfiles = []\nfor top, dirs, names in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if os.path.join(top, d) not in "
        "('/proc', '/sys', '/usr', '/opt')]\n"
        f"    files += [os.path.join(top, n) for n in names if '{token}' in n]\n"
        "print('processes', hits, 'files', files)\n")
    second = run({"job.py": looker}, ["python", "job.py"], limits)
    thread.join(20)
    assert second.exit_code == 0, second.stderr
    assert "processes [] files []" in second.stdout
    ran_from = float(first[0].stdout.split("from ", 1)[1].split()[0])
    ran_until = float(first[0].stdout.split("until ", 1)[1].split()[0])
    looked_at = float(second.stdout.split("at ", 1)[1].split()[0])
    assert ran_from < looked_at < ran_until  # the second looked while the first ran
