"""The sandbox backends a test can run on here: bwrap always; Docker (runc) when an engine
answers and the sandbox image matches the plugin-runtime lock; Docker under gVisor (runsc)
when that runtime is registered too, with the flags the sandbox needs (--network=none,
--host-uds=open: autocoder/sandbox/runsc_flags.py). A backend that is not available skips its
variant with the reason and how to enable it (pytest prints it in the summary, `-ra`); with
AUTOCODER_DOCKER_TESTS=required (CI) it fails instead.

`use_backend(name, settings)` selects one for the test through Django settings
(SANDBOX_BACKEND, SANDBOX_DOCKER_RUNTIME), so every path (run, run_pytest, call_plugin) takes
it as in production.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import pytest

BACKENDS = ("bwrap", "docker", "runsc")
DOCKER_BACKENDS = ("docker", "runsc")
ENABLE = ("start a Docker engine (`dockerd`, as root), build the image (`make sandbox-image`)"
          "; for runsc register it in /etc/docker/daemon.json (docs/sandbox.md, 'gVisor')")


@functools.cache
def docker_unavailable(runtime: str) -> str | None:
    """Why the Docker variant with `runtime` ("" or "runsc") cannot run here, or None."""
    try:
        import docker

        client = docker.from_env(timeout=10)
        client.ping()
    except Exception as exc:  # noqa: BLE001 (any reason means: no engine here)
        return f"no Docker engine answers ({type(exc).__name__}): {ENABLE}"
    from django.conf import settings

    from autocoder.sandbox.image import image_problem, runtime_problem

    problem = image_problem(settings.SANDBOX_DOCKER_IMAGE, client)
    if problem:
        return f"{problem}: {ENABLE}"
    # A runsc registered without the flags the sandbox needs cannot run the gVisor variants
    # (api.http fails there): the same words and fix as doctor's.
    registration = runtime_problem(runtime, client) if runtime else None
    if registration:
        return f"{registration[0]}. To fix it: {registration[1]}"
    return None


def use_backend(name: str, settings: Any) -> str:
    """Select backend `name` for this test (skip when unavailable); the name run() takes."""
    if name == "bwrap":
        settings.SANDBOX_BACKEND = "bwrap"
        return "bwrap"
    runtime = "runsc" if name == "runsc" else ""
    reason = docker_unavailable(runtime)
    if reason and os.environ.get("AUTOCODER_DOCKER_TESTS") == "required":  # CI (.ci/run)
        pytest.fail(f"{name} variant required (AUTOCODER_DOCKER_TESTS): {reason}")
    if reason:
        pytest.skip(f"{name} variant: {reason}")
    settings.SANDBOX_BACKEND = "docker"
    settings.SANDBOX_DOCKER_RUNTIME = runtime
    return "docker"


def leftover_containers() -> list[str]:
    """Sandbox containers the engine still holds (the backend removes each after its run,
    in the background: waited for here), apart from those prepared for a next run."""
    from autocoder.sandbox import docker_standby

    docker_standby.settle()
    ours = docker_standby.owner()  # other processes' prepared containers are theirs
    waiting = {p.container.id for p in docker_standby.every_prepared() if p.container}
    try:
        import docker

        client = docker.from_env(timeout=10)
        return [c.name for c in client.containers.list(
            all=True, filters={"label": "autocoder.sandbox=1"}) if c.id not in waiting
            and c.labels.get(docker_standby.OWNER_LABEL, ours) == ours]
    except Exception:  # noqa: BLE001 (no engine: no container either)
        return []


@pytest.fixture(params=BACKENDS)
def on_each_backend(request: pytest.FixtureRequest, settings: Any) -> str:
    """The test runs on bwrap, Docker (runc) and Docker (gVisor); the Docker variants skip
    with the reason and how to enable them when no engine, image or runtime is here."""
    return use_backend(str(request.param), settings)
