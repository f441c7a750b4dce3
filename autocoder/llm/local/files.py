"""Where a local model's files live, and the lock that lets one process at a time work on them.

For a model file `NAME.gguf` in MODELS_DIR:
  NAME.gguf             the verified model (appears only after the checksum matched)
  NAME.gguf.part        the download so far; its size is where a resumed download starts
  NAME.gguf.state.json  progress for the page (see `progress`)
  NAME.gguf.sha256      the SHA-256 that was verified, in `sha256sum` format
  NAME.gguf.lock        held (flock) while a process downloads; the kernel drops it when the
                        process dies, so a killed worker never leaves a stale lock behind
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class LockBusy(Exception):
    """Another process (or worker thread) holds the lock."""


def models_dir() -> Path:
    """MODELS_DIR (default var/models), created on first use."""
    directory = Path(settings.MODELS_DIR).expanduser()
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def file_name_from_url(url: str) -> str:
    return unquote(urlsplit(url).path.rsplit("/", 1)[-1])


def check_file_name(name: str) -> str:
    """`name` if it is a plain file name (no path, no surprises), else ValueError."""
    if not SAFE_NAME.match(name) or name.endswith((".part", ".lock", ".json", ".sha256")):
        raise ValueError(f"{name!r} is not a usable model file name: use letters, digits, "
                         "dots, dashes and underscores, e.g. my-model-q4_k_m.gguf")
    return name


@dataclass(frozen=True)
class ModelFiles:
    directory: Path
    name: str

    @classmethod
    def for_name(cls, name: str, directory: Path | None = None) -> ModelFiles:
        return cls(directory or models_dir(), check_file_name(name))

    @property
    def target(self) -> Path:
        return self.directory / self.name

    @property
    def part(self) -> Path:
        return self.directory / f"{self.name}.part"

    @property
    def state(self) -> Path:
        return self.directory / f"{self.name}.state.json"

    @property
    def checksum(self) -> Path:
        return self.directory / f"{self.name}.sha256"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.name}.lock"

    def part_size(self) -> int:
        try:
            return self.part.stat().st_size
        except FileNotFoundError:
            return 0


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` for the block; LockBusy if someone else holds it.

    flock belongs to the open file, so two worker threads of one process exclude each other
    too, and the lock goes away with the process that held it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockBusy(str(path)) from None
        yield
    finally:
        os.close(fd)  # closing releases the lock


def is_locked(path: Path) -> bool:
    """Whether some process is working under the lock at `path` right now."""
    if not path.exists():
        return False
    try:
        with exclusive(path):
            return False
    except LockBusy:
        return True
