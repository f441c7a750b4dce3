"""Runs inside a prepared bwrap sandbox: announce readiness, wait for the job, become the job.

The host passes this file's source to the sandbox's interpreter with `-S -I -c`: it imports
nothing of ours (the project is not visible inside) and must stay standalone.

Protocol, on the launcher's own pipes:
* stdout: READY_MARKER once everything is set up (the host reads it before the job's output);
* stdin: one message, then EOF: MESSAGE_TAG, then the six limits as decimal numbers, then the
  job's argv, all NUL-separated (argv items cannot contain NUL: the runner refuses them);
  EOF without a message means the sandbox was discarded unused and exits quietly.

The limits are hard limits set by an unprivileged process (uid 1000, no capabilities), so
the job cannot raise them again. CPU time survives exec, so the launcher's own start (about
15 ms) counts toward the job's `cpu_s`. Errors of the launcher itself start with "launcher: " and
exit 1; a job that cannot be executed exits 127, as in a shell.
"""

from __future__ import annotations

import os
import resource
import sys

READY_MARKER = b"\x00autocoder-sandbox-ready\n"
MESSAGE_TAG = b"autocoder-job-1"
LIMIT_NAMES = ("as", "nproc", "cpu_soft", "cpu_hard", "fsize", "nofile")


def _read_message() -> bytes:
    chunks = []
    while chunk := os.read(0, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _fail(reason: str) -> None:
    os.write(2, f"launcher: {reason}\n".encode())
    os._exit(1)


def _apply_limits(values: list[int]) -> None:
    limits = dict(zip(LIMIT_NAMES, values, strict=True))
    resource.setrlimit(resource.RLIMIT_AS, (limits["as"], limits["as"]))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["nproc"], limits["nproc"]))
    # SIGXCPU at the soft limit, SIGKILL at the hard one.
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_soft"], limits["cpu_hard"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["fsize"], limits["fsize"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["nofile"], limits["nofile"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main() -> None:
    os.write(1, READY_MARKER)
    message = _read_message()
    if not message:
        os._exit(0)
    fields = message.split(b"\x00")
    if fields[0] != MESSAGE_TAG or len(fields) < 2 + len(LIMIT_NAMES):
        _fail("malformed job message")
    try:
        _apply_limits([int(value) for value in fields[1:1 + len(LIMIT_NAMES)]])
    except (ValueError, OSError) as exc:
        _fail(f"cannot apply the limits: {exc}")
    argv = [os.fsdecode(arg) for arg in fields[1 + len(LIMIT_NAMES):]]
    null = os.open(os.devnull, os.O_RDONLY)  # the job gets no stdin, like every other run
    os.dup2(null, 0)
    os.close(null)
    try:
        os.execvpe(argv[0], argv, dict(os.environ))  # noqa: S606 (the job, by design)
    except OSError as exc:
        os.write(2, f"sandbox: cannot execute {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)


if __name__ == "__main__":
    main()
    sys.exit(0)
