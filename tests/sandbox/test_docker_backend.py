"""The Docker backend, where a real engine cannot show it (the real engine runs the hostile
jobs, the pytest runner and plugin calls: tests/sandbox/test_hostile_jobs.py and the
`on_each_backend` variants, tests/sandbox/backends.py). Here:

* the container settings are asserted on the pure `container_kwargs` and passed through the
  docker SDK's own argument conversion (`_create_container_args`), which rejects anything the
  engine API would not take;
* what an engine does not do on demand uses a fake docker client at the SDK boundary
  (a cancelled run, an OOM kill reported by the engine, an engine that does not answer, a
  payload over the argv limit): `FakeContainer` runs the container's command as a local
  process (its /workdir mapped to a temporary directory), so the real entry program, payload
  packing, framing, capping and collection are exercised.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from docker.models.containers import _create_container_args

from autocoder.sandbox import Limits, SandboxError, docker_backend, run

MB = 1024 * 1024
ROOT = Path(__file__).resolve().parents[2]


def test_container_is_locked_down() -> None:
    limits = Limits(memory_mb=300, pids=20, cpu_s=7, workdir_mb=10, file_size_mb=3,
                    open_files=99)
    kwargs = docker_backend.container_kwargs(image="img:1", command=["python", "-V"],
                                             limits=limits)
    assert kwargs["network_mode"] == "none"
    assert kwargs["read_only"] is True
    assert kwargs["cap_drop"] == ["ALL"]
    assert kwargs["security_opt"] == ["no-new-privileges"]
    assert kwargs["user"] == "10001:10001"
    assert (kwargs["mem_limit"], kwargs["memswap_limit"]) == (300 * MB, 300 * MB)
    assert kwargs["pids_limit"] == 20
    assert kwargs["nano_cpus"] == 1_000_000_000
    assert "size=10m" in kwargs["tmpfs"]["/workdir"] and "size=10m" in kwargs["tmpfs"]["/tmp"]
    assert "nosuid" in kwargs["tmpfs"]["/workdir"]
    ulimits = {u["Name"]: (u["Soft"], u["Hard"]) for u in kwargs["ulimits"]}
    assert ulimits == {"cpu": (7, 8), "fsize": (3 * MB, 3 * MB), "nofile": (99, 99),
                       "core": (0, 0)}
    assert set(kwargs["environment"]) == {"PATH", "HOME", "LANG"}
    for absent in ("privileged", "volumes", "mounts", "ports", "network", "cap_add",
                   "devices", "pid_mode", "userns_mode"):
        assert absent not in kwargs


def test_docker_sdk_accepts_every_setting() -> None:
    kwargs = docker_backend.container_kwargs(image="img:1", command=["python", "-V"],
                                             limits=Limits())
    converted = _create_container_args({**kwargs, "version": "1.44"})
    host = converted["host_config"]
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"] and host["PidsLimit"] == Limits().pids
    assert host["Memory"] == host["MemorySwap"] == Limits().memory_mb * MB


class FakeContainer:
    """docker's Container, played by a local process (see the module docstring)."""

    def __init__(self, kwargs: dict[str, Any], state: dict[str, Any]) -> None:
        self.kwargs = kwargs
        self.status = "created"
        self.attrs: dict[str, Any] = {"State": {}}
        self.forced_state = state
        self.removed = self.killed = False
        self.scratch = Path(tempfile.mkdtemp(prefix="fake-container-"))
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = list(self.kwargs["command"])
        assert command[0] == "python"
        config = json.loads(base64.b64decode(command[5]))
        (self.scratch / "workdir").mkdir()
        config["workdir"] = str(self.scratch / "workdir")
        command[5] = base64.b64encode(json.dumps(config).encode()).decode()
        env = {**self.kwargs["environment"],
               "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
        self.out = open(self.scratch / "stdout", "wb")  # noqa: SIM115
        self.err = open(self.scratch / "stderr", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen([sys.executable, *command[1:]], stdout=self.out,
                                     stderr=self.err, env=env, start_new_session=True)
        self.status = "running"

    def reload(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            self.status = "exited"
            self.attrs["State"] = {"ExitCode": self.proc.returncode, "OOMKilled": False,
                                   **self.forced_state}

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.killed = True

    def logs(self, stdout: bool = True, stderr: bool = True) -> bytes:
        self.out.flush()
        self.err.flush()
        return (self.scratch / ("stdout" if stdout else "stderr")).read_bytes()

    def remove(self, force: bool = False) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
        self.out.close()
        self.err.close()
        subprocess.run(["rm", "-rf", str(self.scratch)], check=True)
        self.removed = True


class FakeClient:
    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.created: list[FakeContainer] = []
        self.state = state or {}
        self.containers = self

    def create(self, **kwargs: Any) -> FakeContainer:
        container = FakeContainer(kwargs, self.state)
        self.created.append(container)
        return container


def docker_run(client: FakeClient, files: dict[str, str | bytes], command: list[str],
               limits: Limits, **kwargs: Any):  # type: ignore[no-untyped-def]
    return docker_backend.run(files, command, limits, client=client, **kwargs)


def test_image_comes_from_the_setting(settings: Any) -> None:
    settings.SANDBOX_DOCKER_IMAGE = "registry.example/sandbox:7"
    client = FakeClient()
    docker_run(client, {}, ["python", "-c", "pass"], Limits(timeout_s=20))
    assert client.created[0].kwargs["image"] == "registry.example/sandbox:7"


def test_cancel_check_stops_the_container() -> None:
    client = FakeClient()
    result = docker_run(client, {}, ["python", "-c", "import time; time.sleep(60)"],
                        Limits(timeout_s=20), cancel_check=lambda: True)
    assert result.killed_reason == "cancelled" and client.created[0].removed


def test_oom_kill_by_the_memory_cgroup_is_reported() -> None:
    client = FakeClient(state={"OOMKilled": True, "ExitCode": 137})
    result = docker_run(client, {}, ["python", "-c", "pass"], Limits(timeout_s=20))
    assert result.oom and result.killed_reason == "memory_limit"


def test_files_too_large_for_argv_are_refused_before_any_container() -> None:
    client = FakeClient()
    with pytest.raises(SandboxError, match="too large"):
        docker_run(client, {"blob.bin": os.urandom(2 * MB)}, ["python", "-c", "pass"],
                   Limits())
    assert client.created == []


def test_unreachable_engine_is_a_sandbox_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/autocoder-docker.sock")
    with pytest.raises(SandboxError, match="docker"):
        run({}, ["python", "-c", "pass"], Limits(), backend="docker")


def test_the_sandbox_image_is_the_plugin_runtime() -> None:
    """The Docker sandbox runs plugins on the same pinned runtime as the bwrap sandbox."""
    text = (ROOT / "docker" / "sandbox.Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    assert "USER 10001:10001" in text and "--uid 10001" in text
    assert "COPY autocoder/runtime/requirements.txt" in text
    assert "--no-deps -r /tmp/plugin-runtime.txt" in text
    portal = (ROOT / "Dockerfile").read_text()
    assert "python -m autocoder.runtime.build --dir /opt/plugin-runtime" in portal
    assert "PLUGIN_RUNTIME_DIR=/opt/plugin-runtime" in portal
