"""The Docker backend (production): one locked-down container per run, removed afterwards.

`container_kwargs` is the whole security posture in one pure function; `run` drives a
container through the docker SDK: create, start, poll, kill on timeout or cancel, read the
logs and the frame written by `docker_entry`, remove.
"""

from __future__ import annotations

import base64
import io
import json
import secrets
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autocoder import metrics
from autocoder.sandbox import docker_standby
from autocoder.sandbox.channel import DOCKER_DIR, Channel
from autocoder.sandbox.docker_standby import DockerState, Frame
from autocoder.sandbox.docker_standby import split_frame as _split_frame
from autocoder.sandbox.image import SANDBOX_PATH
from autocoder.sandbox.output import CappedStream
from autocoder.sandbox.process import verdict
from autocoder.sandbox.types import Limits, RunResult, SandboxError
from autocoder.sandbox.workdir import base_dir, remove_tree

WORKDIR = "/workdir"
SANDBOX_TMP = "/tmp"  # noqa: S108 - the container's own tmpfs, not the host's
SANDBOX_USER = "10001:10001"  # the `sandbox` user of docker/sandbox.Dockerfile
NANO_CPUS = 1_000_000_000  # one CPU per run
CHUNK_CHARS = 100_000  # below Linux's 128 KiB limit for one argv string
MAX_PAYLOAD_CHARS = 1_500_000  # below ARG_MAX (2 MiB with the default 8 MiB stack)
POLL_S = 0.2
# gVisor's own threads (its kernel, the Sentry, and its file proxy) count in the container's
# pids cgroup: runsc does not even start under a job-sized limit. Under runsc the cgroup gets
# this headroom and the job's processes are bounded inside gVisor by RLIMIT_NPROC, which
# gVisor's kernel counts for this container alone (under runc it would count every container
# of uid 10001 on the host, hence the cgroup there). 256 was too little under a fork bomb on a
# loaded machine: gVisor's Go runtime could not create a thread and the container died with
# status 2 instead of being stopped at its timeout.
RUNSC_HOST_THREADS = 1024
ENTRY_SOURCE = (Path(__file__).with_name("docker_entry.py")).read_text()


def default_image() -> str:
    from django.conf import settings

    return getattr(settings, "SANDBOX_DOCKER_IMAGE", "autocoder-sandbox:latest")


def default_runtime() -> str:
    """The OCI runtime the engine runs jobs with: "" (the engine's default, runc) or "runsc"
    (gVisor: a kernel of its own between the job and the host's; docs/sandbox.md)."""
    from django.conf import settings

    return getattr(settings, "SANDBOX_DOCKER_RUNTIME", "") if settings.configured else ""


def container_kwargs(*, image: str, command: list[str], limits: Limits,
                     channel_dir: str | None = None, runtime: str = "") -> dict[str, Any]:
    """Everything `containers.create` receives besides the command's payload.

    `channel_dir`: the host directory holding the run's channel socket (channel.py), bound
    read-only at channel.DOCKER_DIR; nothing else of the host is mounted. `runtime`: "" for
    the engine's default (runc), "runsc" for gVisor."""
    from docker.types import LogConfig, Ulimit

    mb = 1024 * 1024
    log_cap = 2 * limits.output_kb * 1024 + mb  # the entry program caps output; this backs it
    kwargs: dict[str, Any] = {
        "image": image,
        "command": command,
        "working_dir": WORKDIR,
        "user": SANDBOX_USER,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {
            WORKDIR: f"rw,nosuid,nodev,size={limits.workdir_mb}m,uid=10001,gid=10001,mode=0700",
            SANDBOX_TMP: f"rw,nosuid,nodev,size={limits.workdir_mb}m,mode=1777",
        },
        "shm_size": limits.workdir_mb * mb,  # /dev/shm: capped like /tmp (Docker's 64 MB)
        "mem_limit": limits.memory_mb * mb,
        "memswap_limit": limits.memory_mb * mb,  # equal to mem_limit: no swap
        "pids_limit": limits.pids + (RUNSC_HOST_THREADS if runtime == "runsc" else 0),
        "nano_cpus": NANO_CPUS,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "ulimits": [
            Ulimit(name="cpu", soft=limits.cpu_s, hard=limits.cpu_s + 1),
            Ulimit(name="fsize", soft=limits.file_size_mb * mb, hard=limits.file_size_mb * mb),
            Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
            Ulimit(name="core", soft=0, hard=0),
        ],
        "environment": {"PATH": SANDBOX_PATH, "HOME": SANDBOX_TMP,
                        "LANG": "C.UTF-8"},
        "hostname": "sandbox",
        "ipc_mode": "private",
        "init": True,
        "log_config": LogConfig(type="json-file",
                                config={"max-size": str(log_cap), "max-file": "1"}),
        "labels": {"autocoder.sandbox": "1"},
        "detach": True,
        "stdin_open": False,
        "tty": False,
    }
    if runtime:
        kwargs["runtime"] = runtime
    if channel_dir is not None:
        kwargs["volumes"] = {channel_dir: {"bind": DOCKER_DIR, "mode": "ro"}}
    return kwargs


def new_marker() -> str:
    return f"@@autocoder-frame-{secrets.token_hex(8)}@@"


def job_lines(files: dict[str, str | bytes], command: list[str], limits: Limits,
              collect: list[str], marker: str, runtime: str = "") -> tuple[str, str]:
    """The entry's config and the job's files (a gzip tar), each in base64."""
    config = {"workdir": WORKDIR, "argv": command, "output_cap": limits.output_kb * 1024,
              "collect": collect, "collect_budget": limits.collect_kb * 1024,
              "marker": marker, "address_space": limits.memory_mb * 1024 * 1024,
              "nproc": limits.pids if runtime == "runsc" else None,
              "cpu_watch": limits.cpu_s if runtime == "runsc" else None}
    payload = base64.b64encode(_tar_gz(files)).decode()
    if len(payload) > MAX_PAYLOAD_CHARS:
        raise SandboxError(f"the job's files are too large for the docker backend "
                           f"({len(payload)} base64 characters, at most {MAX_PAYLOAD_CHARS})")
    return base64.b64encode(json.dumps(config).encode()).decode(), payload


def entry_command(files: dict[str, str | bytes], command: list[str], limits: Limits,
                  collect: list[str], marker: str, runtime: str = "") -> list[str]:
    encoded, payload = job_lines(files, command, limits, collect, marker, runtime)
    chunks = [payload[i:i + CHUNK_CHARS] for i in range(0, len(payload), CHUNK_CHARS)] or [""]
    return ["python", "-I", "-S", "-c", ENTRY_SOURCE, encoded, *chunks]


def _tar_gz(files: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content in sorted(files.items()):
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def run(files: dict[str, str | bytes], command: list[str], limits: Limits, *,
        collect: list[str] | None = None, cancel_check: Callable[[], bool] | None = None,
        client: Any = None, image: str | None = None, runtime: str | None = None,
        channel: Channel | None = None) -> RunResult:
    """`channel` is served from a host directory the engine binds into the container: the
    engine must see the portal's temporary directory at the same path (an engine on this
    machine). Without `client`, the job runs in this thread's prepared container
    (docker_standby.py); a given `client` (a docker.DockerClient, or a test's stand-in)
    gets one container started for the job alone, its files in argv, its output read from
    the engine's log once it ended."""
    from docker.errors import DockerException

    if client is None:
        return _run_prepared(files, command, limits, collect=collect,
                             cancel_check=cancel_check, image=image, runtime=runtime,
                             channel=channel)
    marker = new_marker()
    runtime = default_runtime() if runtime is None else runtime
    argv = entry_command(files, command, limits, collect or [], marker, runtime)
    requested = time.monotonic()
    channel_dir = None
    if channel is not None:
        channel_dir = Path(tempfile.mkdtemp(prefix="channel-", dir=base_dir()))
        channel_dir.chmod(0o755)  # the container's user (10001) reaches the socket
    try:
        if channel is not None and channel_dir is not None:
            channel.open(channel_dir, mode=0o666)
        try:
            container = client.containers.create(**container_kwargs(
                image=image or default_image(), command=argv, limits=limits,
                channel_dir=None if channel_dir is None else str(channel_dir),
                runtime=runtime))
        except DockerException as exc:
            raise SandboxError(f"docker could not create the sandbox container: {exc}") from exc
        try:
            return _drive(container, limits, marker, cancel_check, requested)
        except DockerException as exc:
            raise SandboxError(f"docker failed during the run: {exc}") from exc
        finally:
            try:
                container.remove(force=True)
            except DockerException:
                pass  # already gone; nothing of the run survives it
    finally:
        if channel is not None:
            channel.close()
        if channel_dir is not None:
            remove_tree(channel_dir)


def _run_prepared(files: dict[str, str | bytes], command: list[str], limits: Limits, *,
                  collect: list[str] | None, cancel_check: Callable[[], bool] | None,
                  image: str | None, runtime: str | None,
                  channel: Channel | None) -> RunResult:
    """`run` on this thread's prepared container, or on one started now (docker_standby)."""
    from docker.errors import DockerException

    marker = new_marker()
    runtime = default_runtime() if runtime is None else runtime
    image = image or default_image()
    config, payload = job_lines(files, command, limits, collect or [], marker, runtime)
    key = docker_standby.fit_key(image, runtime, limits)

    def create(channel_dir: str) -> dict[str, Any]:
        return container_kwargs(
            image=image, command=["python", "-I", "-S", "-c", ENTRY_SOURCE, "--prepared"],
            limits=limits, channel_dir=channel_dir, runtime=runtime)

    requested = time.monotonic()
    try:
        for attempt in range(2):
            try:
                sandbox = (docker_standby.take(key, create) if attempt == 0
                           else docker_standby.cold(key, create))
            except DockerException as exc:
                raise SandboxError(f"docker could not start the sandbox container: {exc}") from exc
            try:
                if channel is not None:
                    channel.open(sandbox.channel_dir, mode=0o666)
                metrics.sandbox_started("docker", time.monotonic() - requested)
                done = sandbox.serve(config, payload, limits, marker, cancel_check)
                return _result(limits, done.state, done.stop, done.frame, done.stdout,
                               done.stderr, done.duration_ms)
            except docker_standby.ContainerGone:
                if attempt or channel is not None:  # a channel serves one run only
                    raise
            except DockerException as exc:
                raise SandboxError(f"docker failed during the run: {exc}") from exc
            finally:
                if channel is not None:
                    channel.close()
                sandbox.release()
        raise SandboxError("the sandbox container went away twice")  # not reached
    finally:
        docker_standby.prepare(key, create)


def _drive(container: Any, limits: Limits, marker: str,
           cancel_check: Callable[[], bool] | None, requested: float) -> RunResult:
    started = time.monotonic()
    container.start()
    metrics.sandbox_started("docker", time.monotonic() - requested)
    stop = _wait(container, started + limits.timeout_s, cancel_check)
    if stop is not None:
        container.kill()
    container.reload()
    state = container.attrs.get("State", {})
    duration_ms = int((time.monotonic() - started) * 1000)
    stdout_raw = container.logs(stdout=True, stderr=False) or b""
    stderr_raw = container.logs(stdout=False, stderr=True) or b""
    stdout_raw, frame = _split_frame(stdout_raw, marker)
    return _result(limits, state, stop, frame, stdout_raw, stderr_raw, duration_ms)


def _wait(container: Any, deadline: float, cancel_check: Callable[[], bool] | None) -> str | None:
    while True:
        container.reload()
        if container.status in ("exited", "dead"):
            return None
        if time.monotonic() >= deadline:
            return "timeout"
        if cancel_check is not None and cancel_check():
            return "cancelled"
        time.sleep(POLL_S)


def _result(limits: Limits, state: DockerState, stop: str | None,
            frame: Frame | None, stdout_raw: bytes, stderr_raw: bytes,
            duration_ms: int) -> RunResult:
    cap = limits.output_kb * 1024
    out, err = CappedStream(cap), CappedStream(cap)
    out.feed(stdout_raw)
    err.feed(stderr_raw)
    frame = frame or {}
    if bool(state.get("OOMKilled")):  # the memory cgroup killed it: say so, whatever else
        stop = stop or "memory_limit"
    returncode = frame.get("exit_code", state.get("ExitCode", -1))
    exit_code, timed_out, oom, reason = verdict(
        returncode=returncode if isinstance(returncode, int) else -1,
        stop=stop or frame.get("stop"), stderr=err.text())
    files, omitted = _unpack(frame.get("files", "")), frame.get("omitted", [])
    return RunResult(
        exit_code=exit_code, timed_out=timed_out, oom=oom, killed_reason=reason,
        stdout=out.text(), stderr=err.text(),
        stdout_truncated=out.truncated or frame.get("stdout_total", 0) > cap,
        stderr_truncated=err.truncated or frame.get("stderr_total", 0) > cap,
        duration_ms=duration_ms, backend="docker", files=files, files_omitted=list(omitted),
    )


def _unpack(encoded: str) -> dict[str, bytes]:
    if not encoded:
        return {}
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(encoded)), mode="r:gz") as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            if handle is not None:
                files[member.name] = handle.read()
    return files
