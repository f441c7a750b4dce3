"""One thread that ends reads past their time (autocoder/calling/http_gate.py): a server that
sends an answer one byte at a time would otherwise hold a call for as long as each read's own
timeout, again and again. Starting a thread per request costs about a millisecond; this one
thread serves every request of the process.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

_lock = threading.Condition()
_due: list[tuple[float, int, Callable[[], None]]] = []
_cancelled: set[int] = set()
_numbers = itertools.count()
_thread: list[threading.Thread] = []


def watch(deadline: float, action: Callable[[], None]) -> int:
    """Run `action` at `deadline` (a time.monotonic() value) unless `cancel`led first."""
    with _lock:
        number = next(_numbers)
        heapq.heappush(_due, (deadline, number, action))
        if not _thread:
            _thread.append(threading.Thread(target=_run, name="http-gate-watchdog", daemon=True))
            _thread[0].start()
        _lock.notify()
    return number


def cancel(number: int) -> None:
    with _lock:
        if any(entry[1] == number for entry in _due):
            _cancelled.add(number)


def _run() -> None:
    while True:
        with _lock:
            while not _due or _due[0][0] > time.monotonic():
                _lock.wait(None if not _due else _due[0][0] - time.monotonic())
            _, number, action = heapq.heappop(_due)
            if number in _cancelled:
                _cancelled.discard(number)
                continue
        try:
            action()
        except Exception:  # noqa: S112 - an action that fails has nothing left to stop
            continue
