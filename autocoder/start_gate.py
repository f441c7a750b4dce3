"""The start gate: `up` starts its web and worker processes while it migrates the database.

Booting a child (Python, Django, daphne or Dramatiq, the task modules) takes seconds, and so
does migrating an empty database; on a first start they used to run one after the other. `up`
now starts the children first, with AUTOCODER_START_GATE naming a file in var/run; each child
loads everything it can without the database, then waits here until `up` creates that file
(migrations done, stored secrets sealed under the current key). Without the variable
(compose, `serve`, `rundramatiq` on their own) nothing waits. See docs/operating.md,
"Starting and stopping".
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import psutil
from dramatiq import Broker, Middleware, Worker

ENVIRONMENT = "AUTOCODER_START_GATE"
# The process id of the `up` that will open the gate: a child stops waiting if it is gone.
OWNER_ENVIRONMENT = "AUTOCODER_START_GATE_OWNER"
POLL_S = 0.05

logger = logging.getLogger(__name__)


def gate_path() -> Path | None:
    value = os.environ.get(ENVIRONMENT, "")
    return Path(value) if value else None


def gate_environment(path: Path) -> dict[str, str]:
    """What a child started by this process needs in its environment to wait at `path`."""
    return {ENVIRONMENT: str(path), OWNER_ENVIRONMENT: str(os.getpid())}


def gate_open(path: Path) -> None:
    """Let every child waiting on `path` go on (written whole, then renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(str(os.getpid()))
    partial.replace(path)


def gate_wait() -> None:
    """Block until this process's start gate is open; at once when there is none. SIGTERM
    meanwhile ends the process (it has nothing to finish yet)."""
    path = gate_path()
    if path is None or path.exists():
        return
    logger.info("waiting at the start gate %s until the migrations are done", path)
    restore = _exit_on_sigterm()
    # A mark beside the gate while this process waits: who is held shows without its log (a
    # Dramatiq worker's log is passed on only once it has booted).
    mark = waiting_mark(path, os.getpid())
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.write_text("")
    try:
        owner = int(os.environ.get(OWNER_ENVIRONMENT) or 0)
        while not path.exists():
            if owner and not psutil.pid_exists(owner):
                raise SystemExit(f"the start gate {path} was never opened: the `up` that "
                                 f"started this process (pid {owner}) is gone")
            time.sleep(POLL_S)
    finally:
        mark.unlink(missing_ok=True)
        restore()


def waiting_mark(path: Path, pid: int) -> Path:
    """The file that says process `pid` is waiting at the gate `path`."""
    return path.with_name(f"{path.name}.waiting-{pid}")


def gate_waiting(path: Path) -> list[int]:
    """The processes waiting at the gate `path` now."""
    return sorted(int(mark.name.rsplit("-", 1)[1])
                  for mark in path.parent.glob(f"{path.name}.waiting-*"))


def _exit_on_sigterm() -> Callable[[], None]:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)

    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    signal.signal(signal.SIGTERM, leave)
    return restore


class AwaitStartGate(Middleware):
    """First of the workers' middleware: a worker takes no message, beats no heartbeat and
    runs no sweep before `up` has migrated the database."""

    def before_worker_boot(self, broker: Broker, worker: Worker) -> None:
        gate_wait()
