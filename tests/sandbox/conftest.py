"""Fixtures for the sandbox tests: these need no database.

`host_guard` checks after a hostile job that the host was left as it was: no process of the
job survives, no workdir (or Docker container) is left behind, and (bwrap, whose worker
keeps its next sandbox prepared) the next run works. The sandbox a worker thread
keeps prepared for its next run (standby.py) is not a leftover: it is told apart by pid and
workdir, and `test_standby.py` checks that it shares nothing with the job before it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import psutil
import pytest

from autocoder.sandbox import Limits, run, standby
from autocoder.sandbox.bwrap import SANDBOX_UID
from autocoder.sandbox.workdir import base_dir
from tests.sandbox.backends import (
    leftover_containers,
    on_each_backend,  # noqa: F401  (a fixture)
)

# Small limits keep every hostile test to a few seconds.
HOSTILE = Limits(timeout_s=3, memory_mb=256, pids=16, cpu_s=5, output_kb=16, workdir_mb=8,
                 file_size_mb=2, collect_kb=64)


def prepared_sandbox_pids() -> set[int]:
    pids = set()
    for prepared in standby.every_prepared():
        pids.add(prepared.proc.pid)
        try:
            pids.update(p.pid for p in psutil.Process(prepared.proc.pid).children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return pids


def sandbox_descendants() -> list[psutil.Process]:
    """Our child processes running as the sandbox uid, apart from the namespace holders and
    the sandboxes prepared for the next run."""
    found = []
    children = psutil.Process().children(recursive=True)
    prepared = prepared_sandbox_pids()  # after the listing: a sandbox being prepared grows
    for child in children:
        try:
            if (child.uids().real == SANDBOX_UID and child.name() not in ("cat",)
                    and child.pid not in prepared):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def our_workdirs() -> list[str]:
    """Workdirs of this process on the host, apart from those of prepared sandboxes."""
    prepared = {p.workdir.path.name for p in standby.every_prepared()}
    return [p.name for p in base_dir().iterdir()
            if p.name.startswith(f"run-{os.getpid()}-") and p.name not in prepared]


@pytest.fixture(autouse=True)
def no_warm_sandboxes() -> None:
    """The warm sandboxes earlier tests left in this process's pool (the tools' calls keep
    them, autocoder/sandbox/warm.py) are not this test's leftovers: stopped before it."""
    from autocoder.sandbox import warm_pool

    warm_pool.pool().close_all()


@pytest.fixture
def host_guard() -> Iterator[None]:
    yield
    assert sandbox_descendants() == [], "a sandboxed process outlived its run"
    assert our_workdirs() == [], "a workdir was left on the host"
    assert leftover_containers() == [], "a sandbox container was left on the Docker engine"
    from django.conf import settings

    if settings.SANDBOX_BACKEND == "docker":
        return  # every run gets a fresh container: the next one starts from the image alone
    after = run({}, ["python", "-c", "print(6 * 7)"], Limits(timeout_s=10))
    assert (after.exit_code, after.stdout) == (0, "42\n"), "the next run does not work"
