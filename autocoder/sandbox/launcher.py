"""Runs inside a prepared bwrap sandbox: announce readiness, wait for the job, become the job.

The host passes this file's source to the sandbox's interpreter with `-S -I -c`: it imports
nothing of ours (the project is not visible inside) and must stay standalone.

Protocol, on the launcher's own pipes:
* stdout: READY_MARKER once everything is set up (the host reads it before the job's output);
* stdin: one message, then EOF: MESSAGE_TAG, then the six limits as decimal numbers, then the
  job's argv, all NUL-separated (argv items cannot contain NUL: the runner refuses them);
  EOF without a message means the sandbox was discarded unused and exits quietly.
  With IN_PROCESS_TAG instead, the argv is a Python script and its arguments, which the
  launcher runs itself, as `python -I -S -B script args...` would: this interpreter was
  started with -I -S already, so the job is spared a second interpreter start (about 8 ms).
  A script ending in .pyc is loaded as bytecode (its 16-byte header skipped).

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
IN_PROCESS_TAG = b"autocoder-job-in-process-1"
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
    if fields[0] not in (MESSAGE_TAG, IN_PROCESS_TAG) or len(fields) < 2 + len(LIMIT_NAMES):
        _fail("malformed job message")
    try:
        _apply_limits([int(value) for value in fields[1:1 + len(LIMIT_NAMES)]])
    except (ValueError, OSError) as exc:
        _fail(f"cannot apply the limits: {exc}")
    argv = [os.fsdecode(arg) for arg in fields[1 + len(LIMIT_NAMES):]]
    null = os.open(os.devnull, os.O_RDONLY)  # the job gets no stdin, like every other run
    os.dup2(null, 0)
    os.close(null)
    if fields[0] == IN_PROCESS_TAG:
        _run_script(argv)
        return
    try:
        os.execvpe(argv[0], argv, dict(os.environ))  # noqa: S606 (the job, by design)
    except OSError as exc:
        os.write(2, f"sandbox: cannot execute {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)


def _run_script(argv: list[str]) -> None:
    """Become `python -I -S -B argv[0] argv[1:]` without starting another interpreter."""
    import marshal

    path = argv[0]
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        os.write(2, f"sandbox: cannot execute {path}: {exc.strerror}\n".encode())
        os._exit(127)
    main = type(sys)("__main__")
    main.__file__ = path
    sys.modules["__main__"] = main
    sys.argv = list(argv)
    sys.dont_write_bytecode = True
    if path.endswith(".pyc"):
        if data[:4] != sys.modules["_frozen_importlib_external"].MAGIC_NUMBER:
            _fail(f"{path} is bytecode of another Python version")
        code = marshal.loads(data[16:])  # noqa: S302 (the job's own bytecode, in the sandbox)
    else:
        code = compile(data, path, "exec")
    exec(code, main.__dict__)  # noqa: S102 (the job, by design)


if __name__ == "__main__":
    main()
    sys.exit(0)
