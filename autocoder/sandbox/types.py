"""Value types shared by every sandbox backend: what a run may use and what it did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict


class SandboxError(Exception):
    """The sandbox itself failed (could not be set up or supervised), not the job inside it."""


class PluginRuntimeError(SandboxError):
    """The plugin runtime the sandbox runs jobs on is missing or unusable (autocoder/runtime)."""

    def __init__(self, problem: str) -> None:
        from autocoder.runtime import BUILD_FIX

        super().__init__(f"the plugin runtime is broken: {problem}. To fix it: {BUILD_FIX}")
        self.problem = problem


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30
    # the whole job's memory: a cgroup or a watchdog (bwrap, see memory.py), plus address
    # space per process; a memory cgroup (docker)
    memory_mb: int = 512
    pids: int = 64  # processes and threads
    cpu_s: int = 30  # CPU seconds per process
    output_kb: int = 256  # captured per stream; the rest is discarded and marked truncated
    workdir_mb: int = 64  # size of the writable workdir (and of the private /tmp)
    file_size_mb: int = 16  # largest single file the job may write
    open_files: int = 256
    collect_kb: int = 1024  # total size of the produced files returned in RunResult.files

    def __post_init__(self) -> None:
        for name in ("timeout_s", "memory_mb", "pids", "cpu_s", "output_kb", "workdir_mb",
                     "file_size_mb", "open_files"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {getattr(self, name)!r}")
        if self.collect_kb < 0:
            raise ValueError("Limits.collect_kb must not be negative")


DEFAULT_LIMITS = Limits()

# The keys `sandbox_run --json` prints (docs/sandbox.md, "Trying it by hand"), plus
# stderr_truncated, which callers also need.
RESULT_KEYS = ("exit_code", "timed_out", "oom", "killed_reason", "stdout", "stderr",
               "stdout_truncated", "stderr_truncated", "duration_ms", "backend")


class RunResultDict(TypedDict):
    """`RunResult.as_dict()`: RESULT_KEYS, the produced files left out."""

    exit_code: int | None
    timed_out: bool
    oom: bool
    killed_reason: str | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int
    backend: str


@dataclass
class RunResult:
    exit_code: int | None
    timed_out: bool
    oom: bool
    killed_reason: str | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int
    backend: str
    files: dict[str, bytes] = field(default_factory=dict)
    # Produced files that matched `collect` but were left out (symlink, not a regular file,
    # over the collect_kb budget); reported so that a missing file is never a silent surprise.
    files_omitted: list[str] = field(default_factory=list)

    def as_dict(self) -> RunResultDict:
        return {"exit_code": self.exit_code, "timed_out": self.timed_out, "oom": self.oom,
                "killed_reason": self.killed_reason, "stdout": self.stdout,
                "stderr": self.stderr, "stdout_truncated": self.stdout_truncated,
                "stderr_truncated": self.stderr_truncated, "duration_ms": self.duration_ms,
                "backend": self.backend}
