"""Reading a directory into the `files` mapping that `sandbox.run` takes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from autocoder.sandbox.types import Limits

SKIPPED_DIRS = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache"})


def read_job_dir(root: Path, limits: Limits) -> dict[str, str | bytes]:
    """Regular files under root (symlinks skipped: they could point anywhere on the host)."""
    if not root.is_dir():
        raise ValueError(f"{root} is not a directory")
    budget = limits.workdir_mb * 1024 * 1024
    files: dict[str, str | bytes] = {}
    for current, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS
                         and not os.path.islink(os.path.join(current, d)))
        for name in sorted(names):
            path = Path(current, name)
            if not stat.S_ISREG(path.lstat().st_mode):
                continue
            data = path.read_bytes()
            budget -= len(data)
            if budget < 0:
                raise ValueError(f"{root} holds more than the {limits.workdir_mb} MB workdir")
            files[path.relative_to(root).as_posix()] = data
    return files
