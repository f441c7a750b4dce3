"""Hostile jobs in the real bwrap sandbox: each ends safely, says why, and leaves the host as
it was (the `host_guard` fixture checks that, then checks that the next run works).

Every test runs twice: in a sandbox prepared ahead for the run (a worker's usual case) and in
one built on the spot (a worker thread's first run)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from autocoder.sandbox import bwrap, run, standby
from tests.sandbox.conftest import HOSTILE

pytestmark = pytest.mark.usefixtures("sandbox_start", "host_guard")


@pytest.fixture(params=["prepared", "cold"], autouse=True)
def sandbox_start(request: pytest.FixtureRequest) -> str:
    standby.release_all()
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


def test_host_files_outside_the_workdir_cannot_be_read() -> None:
    secret_file = Path.home() / f".autocoder-sandbox-test-{uuid.uuid4().hex}"
    secret_file.write_text("home secret")
    secret_file.chmod(0o644)  # readable by anyone on the host: only the sandbox stops it
    try:
        paths = [str(secret_file), "/etc/shadow", "/etc/passwd", "/etc/hostname",
                 "/work/main/manage.py", "/work/main/autocoder/settings.py",
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


def test_home_and_project_directories_show_only_the_interpreter() -> None:
    from django.conf import settings

    from autocoder.sandbox.bwrap import host_layout

    watched = [str(Path.home()), str(settings.BASE_DIR)]
    dests = [dest for _src, dest in host_layout().binds]
    expected = {
        directory: sorted({Path(d).relative_to(directory).parts[0] for d in dests
                           if d.startswith(directory + "/")})
        for directory in watched
    }
    source = (f"import os\nfor d in {watched!r}:\n"
              "    print(d, sorted(os.listdir(d)) if os.path.isdir(d) else [])\n")
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
    assert "Network is unreachable" in result.stdout
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


def test_nested_user_namespaces_and_privileges_are_unavailable() -> None:
    source = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "print('unshare', libc.unshare(0x10000000), ctypes.get_errno())\n"
              "print('ids', os.getresuid(), os.getgroups())\n"
              "status = open('/proc/self/status').read().splitlines()\n"
              "print([l for l in status if l.startswith(('CapEff', 'CapPrm', 'NoNewPrivs'))])\n")
    result = job(source)
    assert "unshare -1" in result.stdout
    assert "ids (1000, 1000, 1000) []" in result.stdout
    assert "CapEff:\\t0000000000000000" in result.stdout and "NoNewPrivs:\\t1" in result.stdout
