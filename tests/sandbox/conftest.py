"""Fixtures for the sandbox tests: these need no database.

`host_guard` checks after a hostile job that the host was left as it was: no process of the
job survives, no workdir is left behind, and the next run works.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import psutil
import pytest

from autocoder.sandbox import Limits, run
from autocoder.sandbox.bwrap import SANDBOX_UID
from autocoder.sandbox.workdir import base_dir

# Small limits keep every hostile test to a few seconds.
HOSTILE = Limits(timeout_s=3, memory_mb=256, pids=16, cpu_s=5, output_kb=16, workdir_mb=8,
                 file_size_mb=2, collect_kb=64)


def sandbox_descendants() -> list[psutil.Process]:
    """Our child processes running as the sandbox uid, apart from the namespace holders."""
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.uids().real == SANDBOX_UID and child.name() not in ("cat",):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def our_workdirs() -> list[str]:
    return [p.name for p in base_dir().iterdir() if p.name.startswith(f"run-{os.getpid()}-")]


@pytest.fixture
def host_guard() -> Iterator[None]:
    yield
    assert sandbox_descendants() == [], "a sandboxed process outlived its run"
    assert our_workdirs() == [], "a workdir was left on the host"
    after = run({}, ["python", "-c", "print(6 * 7)"], Limits(timeout_s=10))
    assert (after.exit_code, after.stdout) == (0, "42\n"), "the next run does not work"
