"""The user namespace each worker thread's sandboxes live in when the portal runs as root.

See bwrap.py for why: jobs run as the unprivileged host uid SANDBOX_UID, inside a user
namespace owned by it, prepared once per worker thread and kept alive by a `cat` holder.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import threading
import weakref
from pathlib import Path

from autocoder.sandbox.types import SandboxError

SANDBOX_UID = 2_000_000_000  # host uid and gid of jobs when the portal runs as root
INSIDE_UID = 1000
HOST_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


def drop_to_sandbox_uid() -> list[str]:
    """Argv prefix that makes the rest run as SANDBOX_UID.

    setpriv rather than Popen(user=...): Python can only vfork without a uid change, and a
    full fork of a worker that has loaded torch (hundreds of MB) costs tens of milliseconds
    per run; the extra exec costs about one.
    """
    setpriv = shutil.which("setpriv")
    if not setpriv:
        raise SandboxError("setpriv not found: install util-linux")
    return [setpriv, f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--"]


_HOLDER_SCRIPT = (
    "echo 0 > /proc/sys/user/max_user_namespaces && echo ready && "
    "exec setpriv --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- cat"
)


class _Holder:
    """The `cat` process keeping a user namespace alive, and our fd on that namespace."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.fd = -1

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()  # cat sees EOF and exits: no holder outlives us
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe and not pipe.closed:
                pipe.close()


class UserNamespace:
    """A user namespace owned by SANDBOX_UID in which bwrap sets up each run."""

    def __init__(self) -> None:
        unshare = shutil.which("unshare")
        if not unshare:
            raise SandboxError("unshare not found: install util-linux")
        proc = subprocess.Popen(
            [*drop_to_sandbox_uid(), unshare, "--user", "--keep-caps", "--", "/bin/sh", "-c",
             _HOLDER_SCRIPT],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=HOST_ENV, start_new_session=True, close_fds=True,
        )
        self._holder = _Holder(proc)
        weakref.finalize(self, self._holder.close)
        self._await_ready()
        mapping = f"0 0 1\n{INSIDE_UID} {SANDBOX_UID} 1\n"
        try:
            Path(f"/proc/{proc.pid}/uid_map").write_text(mapping)
            Path(f"/proc/{proc.pid}/gid_map").write_text(mapping)
            self._holder.fd = os.open(f"/proc/{proc.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            self._holder.close()
            raise SandboxError(f"cannot prepare the sandbox user namespace: {exc}") from exc

    @property
    def fd(self) -> int:
        return self._holder.fd

    def _await_ready(self) -> None:
        proc = self._holder.proc
        assert proc.stdout is not None and proc.stderr is not None
        ready, _, _ = select.select([proc.stdout], [], [], 10)
        line = proc.stdout.readline() if ready else b""
        if line != b"ready\n":
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            detail = proc.stderr.read().decode(errors="replace").strip()
            self._holder.close()
            raise SandboxError(f"cannot create the sandbox user namespace: {detail or 'timeout'}")

    def alive(self) -> bool:
        return self._holder.fd >= 0 and self._holder.proc.poll() is None

    def close(self) -> None:
        self._holder.close()


_local = threading.local()


def thread_namespace() -> UserNamespace:
    namespace = getattr(_local, "namespace", None)
    if namespace is None or not namespace.alive():
        namespace = _local.namespace = UserNamespace()
    return namespace


