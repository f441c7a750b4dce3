"""The job's writable directory on the host: created per run, size-capped, always removed.

As root the workdir is a private tmpfs mount with a hard size limit (a job filling it gets
ENOSPC, the host disk is never touched). Without root it is a plain directory and the
supervisor polls its size instead (see `usage_exceeds`).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shutil
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from autocoder.sandbox.types import SandboxError

MS_NOSUID, MS_NODEV = 2, 4
MNT_DETACH = 2
# Collection walks what the job left behind; these bounds keep a hostile tree (1000-deep
# directories, a million files) from costing the host more than a moment.
MAX_WALK_DEPTH = 64
MAX_WALK_ENTRIES = 20_000
RESERVED_DIR = ".autocoder"  # the runner's own files (reports) live here

_sweep_lock = threading.Lock()
_swept = False


def safe_relpath(path: str) -> PurePosixPath:
    """The relative path of a job file, or ValueError when it could escape the workdir."""
    if not isinstance(path, str) or not path or "\x00" in path or "\\" in path:
        raise ValueError(f"invalid file path {path!r}")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or pure == PurePosixPath("."):
        raise ValueError(f"file path {path!r} escapes the workdir")
    return pure


def base_dir() -> Path:
    root = Path(tempfile.gettempdir()) / f"autocoder-sandbox-{os.geteuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    info = root.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise SandboxError(f"{root} is not a directory owned by this user")
    return root


class Workdir:
    """Context manager for one run's workdir; `owner` is the uid/gid the job runs as."""

    def __init__(self, *, size_mb: int, owner: tuple[int, int] | None, use_tmpfs: bool) -> None:
        self.size_mb = size_mb
        self.owner = owner
        self.use_tmpfs = use_tmpfs
        self.mounted = False
        self.path = Path()

    def __enter__(self) -> Workdir:
        root = base_dir()
        _sweep_stale(root)
        self.path = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=root))
        try:
            if self.use_tmpfs:
                options = f"size={self.size_mb}m,mode=0700,nr_inodes=65536"
                if self.owner:
                    options += f",uid={self.owner[0]},gid={self.owner[1]}"
                _mount_tmpfs(self.path, options)
                self.mounted = True
        except BaseException:
            self.cleanup()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def cleanup(self) -> None:
        if self.mounted:
            _umount(self.path)
            self.mounted = False
            try:  # the detached tmpfs took the job's files with it: an empty mountpoint
                os.rmdir(self.path)
                return
            except OSError:
                pass
        remove_tree(self.path)

    def write(self, files: dict[str, str | bytes]) -> None:
        for name, content in files.items():
            rel = safe_relpath(name)
            data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
            target = self.path.joinpath(*rel.parts)
            try:
                self._make_parents(target.parent)
                target.write_bytes(data)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EFBIG):
                    raise ValueError(f"the job's files do not fit in the {self.size_mb} MB "
                                     f"workdir ({name})") from exc
                # e.g. both "a" and "a/b" given: one path is a file and a directory
                raise ValueError(f"cannot write {name!r} into the workdir: "
                                 f"{exc.strerror}") from exc
            self._own(target)

    def _make_parents(self, directory: Path) -> None:
        missing = []
        while directory != self.path and not directory.exists():
            missing.append(directory)
            directory = directory.parent
        for path in reversed(missing):
            path.mkdir()
            self._own(path)

    def _own(self, path: Path) -> None:
        if self.owner and os.geteuid() == 0:
            os.chown(path, *self.owner, follow_symlinks=False)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(path: Path, options: str) -> None:
    if _libc().mount(b"tmpfs", os.fsencode(path), b"tmpfs", MS_NOSUID | MS_NODEV,
                     options.encode()) != 0:
        err = ctypes.get_errno()
        raise SandboxError(f"cannot mount the workdir tmpfs at {path}: {os.strerror(err)}")


def _umount(path: Path) -> None:
    # MNT_DETACH: never blocked by a straggler; the pages are freed with the last reference.
    _libc().umount2(os.fsencode(path), MNT_DETACH)


def remove_tree(path: Path) -> None:
    """Remove a job's tree however deep or odd it is (shutil.rmtree recurses per level)."""
    if not os.path.lexists(path):
        return
    try:
        shutil.rmtree(path)
    except (RecursionError, OSError):
        subprocess.run(["chmod", "-R", "u+rwX", "--", str(path)], capture_output=True, check=False)
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)],
                       capture_output=True, check=False)


def _sweep_stale(root: Path) -> None:
    """Remove workdirs left by a process that was killed mid-run (its finally never ran)."""
    global _swept
    with _sweep_lock:
        if _swept:
            return
        _swept = True
    for entry in root.iterdir():
        parts = entry.name.split("-")
        if len(parts) < 3 or parts[0] != "run" or not parts[1].isdigit():
            continue
        if int(parts[1]) == os.getpid() or pid_alive(int(parts[1])):
            continue
        if os.path.ismount(entry):
            _umount(entry)
        remove_tree(entry)


def pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists (a leftover's owner is still running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def usage_exceeds(path: Path, budget: int) -> bool:
    """True once the tree holds more than `budget` bytes (stops counting at the budget)."""
    used = 0
    for _rel, _fd, _name, info in _walk(path):
        used += info.st_blocks * 512
        if used > budget:
            return True
    return False


def _walk(root: Path) -> Iterator[tuple[PurePosixPath, int, str, os.stat_result]]:
    """Every entry under root, without following symlinks; one directory fd open at a time.

    Runs after every process of the job is dead, so nothing can swap a checked directory
    for a symlink between the listing and the open.
    """
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    stack: list[PurePosixPath] = [PurePosixPath()]
    seen = 0
    try:
        while stack:
            rel = stack.pop()
            try:
                dir_fd = os.open(str(rel), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                 dir_fd=root_fd)
            except OSError:  # e.g. ENAMETOOLONG deep down: not collected
                continue
            try:
                with os.scandir(dir_fd) as entries:
                    names = sorted(entry.name for entry in entries)
                for name in names:
                    seen += 1
                    if seen > MAX_WALK_ENTRIES:
                        return
                    try:
                        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                    except OSError:
                        continue
                    yield rel / name, dir_fd, name, info
                    if stat.S_ISDIR(info.st_mode) and len(rel.parts) < MAX_WALK_DEPTH:
                        stack.append(rel / name)
            finally:
                os.close(dir_fd)
    finally:
        os.close(root_fd)


def glob_match(path: PurePosixPath, pattern: str) -> bool:
    """`pattern` matched segment by segment; `**` stands for any number of directories."""
    return _match(path.parts, PurePosixPath(pattern).parts)


def _match(parts: tuple[str, ...], pats: tuple[str, ...]) -> bool:
    if not pats:
        return not parts
    if pats[0] == "**":
        return any(_match(parts[i:], pats[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], pats[0]) and _match(parts[1:], pats[1:])


def collect(root: Path, patterns: list[str], budget: int) -> tuple[dict[str, bytes], list[str]]:
    """Regular files matching `patterns`, read without following symlinks, within `budget`."""
    for pattern in patterns:
        safe_relpath(pattern)
    files: dict[str, bytes] = {}
    omitted: list[str] = []
    left = budget
    for rel, dir_fd, name, info in _walk(root):
        if not any(glob_match(rel, pattern) for pattern in patterns):
            continue
        if stat.S_ISDIR(info.st_mode):
            continue
        if not stat.S_ISREG(info.st_mode):
            omitted.append(f"{rel} (not a regular file)")
            continue
        data = _read_regular(dir_fd, name, left)
        if data is None:
            omitted.append(f"{rel} (over the {budget // 1024} KB collect budget)")
            continue
        files[str(rel)] = data
        left -= len(data)
    return files, omitted


def _read_regular(dir_fd: int, name: str, budget: int) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= budget:
            chunk = os.read(fd, min(1 << 20, budget + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > budget else b"".join(chunks)
    finally:
        os.close(fd)
