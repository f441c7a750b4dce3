"""`manage.py sandbox_run`, `safety_scan` and `sandbox_bench` as an operator runs them.

One subprocess run per command, with DATABASE_URL and REDIS_URL pointing at closed ports,
shows that the commands never touch the database (manage.py does not start the embedded
services for them); the other cases call the commands in-process.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

ROOT = Path(__file__).resolve().parents[2]
NO_DATABASE = {"DATABASE_URL": "postgres://nobody:nothing@127.0.0.1:9/none",
               "REDIS_URL": "redis://127.0.0.1:9/0"}


def manage(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, **NO_DATABASE, **(env or {})})


def test_sandbox_run_prints_the_result_as_json(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "greet.py").write_text("print('hello from the workdir')\n")
    done = manage("sandbox_run", str(tmp_path), "--json", "--timeout", "20", "--",
                  "python", "-c", "import pkg.greet, sys; sys.exit(5)")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["exit_code"] == 5 and data["stdout"] == "hello from the workdir\n"
    assert {"exit_code", "timed_out", "oom", "killed_reason", "stdout", "stderr",
            "stdout_truncated", "duration_ms", "backend"} <= set(data)


def command_json(*args: str, **options: object) -> dict:
    out = io.StringIO()
    call_command(*args, json=True, stdout=out, stderr=io.StringIO(), **options)
    return json.loads(out.getvalue())


def test_sandbox_run_limits_from_the_options(tmp_path: Path) -> None:
    data = command_json("sandbox_run", str(tmp_path), "--", "python", "-c",
                        "print('z' * 10000); import time; time.sleep(30)",
                        timeout=1, output_kb=4, memory_mb=200, pids=8)
    assert data["timed_out"] and data["stdout_truncated"] and len(data["stdout"]) == 4096


def test_sandbox_run_exits_2_when_the_sandbox_fails(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/autocoder-docker.sock")
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("sandbox_run", str(tmp_path), "--", "python", "-c", "pass",
                     backend="docker", json=True, stdout=out, stderr=io.StringIO())
    assert exited.value.code == 2
    assert "docker" in json.loads(out.getvalue())["error"]


def test_sandbox_run_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="not a directory"):
        call_command("sandbox_run", "/nonexistent/autocoder-dir", "--", "python", "-c", "pass")
    with pytest.raises(CommandError, match="after `--`"):
        call_command("sandbox_run", str(tmp_path))
    with pytest.raises(CommandError, match="must be positive"):
        call_command("sandbox_run", str(tmp_path), "--", "python", "-c", "pass", timeout=0)


def plugin_dir(root: Path, **extra: str) -> Path:
    (root / "plugin.toml").write_text(
        '[plugin]\nname = "x"\n[permissions]\nnetwork = false\nfilesystem = "none"\n')
    (root / "x").mkdir()
    (root / "x" / "plugin.py").write_text("def f():\n    return 1\n")
    for name, source in extra.items():
        (root / "x" / name).write_text(source)
    return root


def test_safety_scan_passes_a_clean_plugin(tmp_path: Path) -> None:
    assert command_json("safety_scan", str(plugin_dir(tmp_path))) == {"verdict": "pass",
                                                                      "findings": []}
    out = io.StringIO()
    call_command("safety_scan", str(tmp_path), stdout=out)
    assert "verdict: pass" in out.getvalue()


def test_safety_scan_blocks_with_exit_1(tmp_path: Path) -> None:
    plugin_dir(tmp_path, **{"net.py": "import socket\n"})
    done = manage("safety_scan", str(tmp_path), "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["verdict"] == "block" and data["findings"][0]["file"] == "x/net.py"
    assert {"tool", "rule", "severity", "file", "line", "message"} <= set(data["findings"][0])
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("safety_scan", str(tmp_path), stdout=out)
    assert exited.value.code == 1 and "verdict: block" in out.getvalue()


def test_sandbox_bench_prints_figures_as_json() -> None:
    done = manage("sandbox_bench", "--runs", "3", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["inside_ms"] > 0 and data["outside_ms"] > 0
    assert data["ratio"] == round(data["inside_ms"] / data["outside_ms"], 2)
    assert data["scan_lines"] >= 490 and data["scan_verdict"] == "pass"
