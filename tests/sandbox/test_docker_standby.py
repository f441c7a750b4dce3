"""Prepared containers (autocoder/sandbox/docker_standby.py) on the real engine: each serves
one job and is removed; the next job gets a fresh one; a dead one is replaced by a container
started on the spot; the limits hold on the prepared path. Runc only (runsc runs the same
code; the hostile jobs run on both)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from autocoder.sandbox import Limits, SandboxError, docker_standby, run
from tests.sandbox.backends import use_backend

LIMITS = Limits(timeout_s=10, memory_mb=128, pids=16, workdir_mb=8)


@pytest.fixture
def docker(settings: Any) -> Iterator[None]:
    use_backend("docker", settings)
    docker_standby.release_all()  # every test starts with nothing prepared in this thread
    yield
    docker_standby.release_all()


def exists(container_id: str) -> bool:
    from docker.errors import NotFound

    try:
        docker_standby.client().containers.get(container_id)
    except NotFound:
        return False
    return True


def ready() -> docker_standby.Prepared:
    prepared = docker_standby.prepared()
    assert prepared is not None, "no container was prepared after a run"
    prepared.wait_ready()
    return prepared


# runc binds /etc/hostname from the container's directory on the host, named by its id
WHICH = "print(open('/proc/self/mountinfo').read())"


def test_a_prepared_container_serves_one_job_and_is_removed(docker: None, host_guard: None,
                                                            ) -> None:
    first = run({"job.py": WHICH}, ["python", "job.py"], LIMITS)
    assert first.exit_code == 0, first.stderr
    prepared = ready()
    container_id = prepared.container.id
    assert container_id not in first.stdout  # prepared for the next job, not used by this one

    second = run({"job.py": WHICH}, ["python", "job.py"], LIMITS)
    assert second.exit_code == 0, second.stderr
    assert container_id in second.stdout  # the job ran in the prepared container
    docker_standby.settle()
    assert not exists(container_id), "the container outlived its job"
    assert ready().container.id != container_id  # the next job gets another one


def test_the_next_job_sees_nothing_of_the_previous_one(docker: None, host_guard: None) -> None:
    writer = ("open('/workdir/left.txt', 'w').write('x'); open('/tmp/left.txt', 'w').write('x')\n"
              "print('written')")
    assert run({"job.py": writer}, ["python", "job.py"], LIMITS).stdout == "written\n"
    ready()
    looker = ("import os\n"
              "print([p for p in ('/workdir/left.txt', '/tmp/left.txt') if os.path.exists(p)])")
    result = run({"job.py": looker}, ["python", "job.py"], LIMITS)
    assert (result.exit_code, result.stdout) == (0, "[]\n"), result.stderr


def test_a_dead_prepared_container_is_replaced(docker: None, host_guard: None) -> None:
    run({}, ["python", "-c", "pass"], LIMITS)
    prepared = ready()
    prepared.container.kill()
    prepared.container.wait(timeout=30)
    result = run({}, ["python", "-c", "print(6 * 7)"], LIMITS)
    assert (result.exit_code, result.stdout) == (0, "42\n"), result.stderr
    docker_standby.settle()
    assert not exists(prepared.container.id)


def test_limits_hold_on_the_prepared_path(docker: None, host_guard: None) -> None:
    forks = ("import os, time\ncount = 0\nfor _ in range(40):\n    try:\n"
             "        if os.fork() == 0:\n            time.sleep(1)\n            os._exit(0)\n"
             "        count += 1\n    except OSError:\n        break\nprint(count)\n")
    run({}, ["python", "-c", "pass"], LIMITS)
    prepared = ready()
    result = run({"job.py": forks}, ["python", "job.py"], LIMITS)
    assert prepared.handed_over, "the job did not run in the prepared container"
    assert result.exit_code == 0, result.stderr
    assert 0 < int(result.stdout) < LIMITS.pids  # the pids limit stopped the forks
    hog = "data = bytearray(512 * 1024 * 1024)\nprint('allocated')\n"
    ready()
    result = run({"job.py": hog}, ["python", "job.py"], LIMITS)
    assert result.oom and "allocated" not in result.stdout


def test_a_job_with_other_limits_gets_a_container_of_its_own(docker: None) -> None:
    run({}, ["python", "-c", "pass"], LIMITS)
    prepared = ready()
    other = Limits(timeout_s=10, memory_mb=96, pids=8, workdir_mb=4)
    result = run({}, ["python", "-c", "import shutil; print(shutil.disk_usage('/workdir').total)"],
                 other)
    assert result.exit_code == 0 and int(result.stdout) == 4 * 1024 * 1024
    assert not prepared.handed_over
    docker_standby.settle()
    assert not exists(prepared.container.id)


def test_a_container_is_built_on_the_engine_named_when_it_was_asked_for(
        docker: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A background build that starts after DOCKER_HOST changed must not put a container
    meant for one engine on another (CI: the unreachable-engine test was served by a
    container prepared on the real engine under the unreachable engine's key)."""
    from autocoder.sandbox.docker_backend import container_kwargs, default_image

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/autocoder-docker.sock")
    key = docker_standby.fit_key(default_image(), "", LIMITS)
    monkeypatch.delenv("DOCKER_HOST")  # the build runs once the variable points elsewhere

    def create(channel_dir: str) -> dict[str, Any]:
        return container_kwargs(image=default_image(), command=["python", "-c", "pass"],
                                limits=LIMITS, channel_dir=channel_dir, runtime="")

    prepared = docker_standby.Prepared(key, create, background=False)
    with pytest.raises(SandboxError, match="nonexistent"):
        prepared.wait_ready()
    assert prepared.container is None
    prepared.release()

    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/autocoder-docker.sock")
    with pytest.raises(SandboxError, match="docker"):
        run({}, ["python", "-c", "pass"], LIMITS)
