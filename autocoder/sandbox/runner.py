"""`run()`: validate the request, pick the backend, hand back a RunResult."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from autocoder.sandbox.types import DEFAULT_LIMITS, Limits, RunResult, SandboxError
from autocoder.sandbox.workdir import safe_relpath

if TYPE_CHECKING:
    from autocoder.sandbox.channel import Channel

BACKENDS = ("bwrap", "docker")


def default_backend() -> str:
    from django.conf import settings

    return getattr(settings, "SANDBOX_BACKEND", "bwrap") if settings.configured else "bwrap"


def run(
    files: dict[str, str | bytes], command: list[str], limits: Limits = DEFAULT_LIMITS, *,
    backend: str | None = None, collect: list[str] | None = None,
    cancel_check: Callable[[], bool] | None = None, in_process: bool = False,
    channel: Channel | None = None,
) -> RunResult:
    """Run `command` (argv, cwd = the workdir holding `files`) under `limits`.

    `in_process`: `command` is `["python", "-I", "-S", "-B", SCRIPT, *ARGS]`, and the bwrap
    backend runs SCRIPT in the interpreter its prepared sandbox has already started rather
    than starting a second one (the same job, about 8 ms sooner); Docker runs the command.

    `channel`: served while the job runs, at `channel.inside_path(backend)` inside (see
    channel.py); closed, its socket removed, when the job has ended.

    Raises ValueError for a bad request (a path escaping the workdir, an empty command) and
    SandboxError when the sandbox itself fails; whatever the job does is in the RunResult.
    """
    for name in files:
        safe_relpath(name)
    for pattern in collect or []:
        safe_relpath(pattern)
    if not command or not all(isinstance(arg, str) and "\x00" not in arg for arg in command):
        raise ValueError("command must be a non-empty list of strings without NUL bytes")
    if in_process and (tuple(command[:4]) != ("python", "-I", "-S", "-B") or len(command) < 5):
        raise ValueError('in_process needs the command ["python", "-I", "-S", "-B", SCRIPT, ...]')
    chosen = backend or default_backend()
    if chosen == "bwrap":
        import autocoder.sandbox.bwrap as bwrap

        return bwrap.run(files, command, limits, collect=collect, cancel_check=cancel_check,
                         in_process=in_process, channel=channel)
    if chosen == "docker":
        import autocoder.sandbox.docker_backend as docker_backend

        return docker_backend.run(files, command, limits, collect=collect,
                                  cancel_check=cancel_check, channel=channel)
    raise SandboxError(f"unknown sandbox backend {chosen!r} (expected one of {BACKENDS})")
