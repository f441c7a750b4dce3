"""The process's pool of warm sandboxes (warm.py): take, give back, recycle, retire.

One pool per process (a forked copy starts an empty one: the sandboxes are the parent's). A
call takes an idle sandbox of its key, or starts one when the pool has room, or gets None
(the caller runs it cold). A reaper thread stops sandboxes idle longer than the idle time and
those whose key is no longer wanted (`set_wanted`), every RETIRE_CHECK_S.
docs/sandbox.md, "Warm sandboxes".
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import autocoder.sandbox.warm as warm
from autocoder.sandbox.channel import Channel
from autocoder.sandbox.types import Limits, RunResult, SandboxError
from autocoder.sandbox.warm import WarmKey, WarmSandbox

logger = logging.getLogger(__name__)

Wanted = Callable[[Iterable[WarmKey]], set[WarmKey]]
COLD_FOR_S = 300.0  # a plugin found not warmable is run cold this long before it is tried again
FAILED_COLD_FOR_S = 30.0  # after a warm sandbox failed to start (the installation's fault)


class Pool:
    def __init__(self) -> None:
        self.owner_pid = os.getpid()
        self._lock = threading.Lock()
        self._idle: list[WarmSandbox] = []  # least recently used first
        self._busy: set[WarmSandbox] = set()
        self._starting = 0
        self._cold: dict[str, float] = {}  # fingerprint -> until when it is run cold
        self._wake = threading.Event()
        self._reaper: threading.Thread | None = None
        self.started = 0  # sandboxes started by this pool (tests, the benchmark)

    # -- a call -----------------------------------------------------------------------------

    def run(self, key: WarmKey, files: Mapping[str, str | bytes], *, entry: str, site: str,
            runner: str, call_text: str, limits: Limits,
            channel: Channel | None) -> RunResult | None:
        settings = warm.configured()
        # As root only: a warm sandbox has a user namespace and a tmpfs workdir of its own
        if not settings.enabled or settings.max_sandboxes == 0 or os.geteuid() != 0:
            return None
        fingerprint = warm.fingerprint(files, entry, site, runner, limits)
        sandbox, may_start = self._take(key, fingerprint, settings.max_sandboxes)
        if sandbox is None:
            if not may_start:
                return None
            sandbox = self._start(key, fingerprint, files, entry=entry, site=site,
                                  runner=runner, limits=limits)
            if sandbox is None:
                return None
        try:
            result = sandbox.call(call_text, limits, channel)
        except BaseException:
            self._give_back(sandbox, keep=False)
            raise
        self._give_back(sandbox, keep=sandbox.calls < settings.max_calls)
        return result

    def _take(self, key: WarmKey, fingerprint: str,
              room: int) -> tuple[WarmSandbox | None, bool]:
        """(an idle sandbox of `key`, marked busy, or None; whether a new one may be started,
        its place then reserved). Neither when the pool is all busy or `key` runs cold."""
        closing: list[WarmSandbox] = []
        found: WarmSandbox | None = None
        may_start = False
        with self._lock:
            for sandbox in reversed(self._idle):
                if sandbox.key == key and sandbox.fingerprint == fingerprint:
                    self._idle.remove(sandbox)
                    if sandbox.alive():
                        found = sandbox
                        self._busy.add(sandbox)
                        break
                    closing.append(sandbox)
            if found is None and self._cold.get(fingerprint, 0.0) <= time.monotonic():
                if len(self._idle) + len(self._busy) + self._starting >= room and self._idle:
                    closing.append(self._idle.pop(0))  # the least recently used makes room
                may_start = len(self._idle) + len(self._busy) + self._starting < room
                if may_start:
                    self._starting += 1
        for sandbox in closing:
            sandbox.close()
        return found, may_start

    def _start(self, key: WarmKey, fingerprint: str, files: Mapping[str, str | bytes], *,
               entry: str, site: str, runner: str, limits: Limits) -> WarmSandbox | None:
        """A new sandbox for `key`, marked busy (its place was reserved by _take)."""
        sandbox: WarmSandbox | None = None
        try:
            sandbox = WarmSandbox(key, fingerprint, files, entry=entry, site=site,
                                  runner=runner, limits=limits)
        except warm.NotWarmable as exc:
            logger.info("plugin version %s is run in a sandbox per call: %s", key.version_id,
                        exc)
            with self._lock:
                self._cold[fingerprint] = time.monotonic() + COLD_FOR_S
        except (SandboxError, OSError, ValueError) as exc:
            logger.warning("could not start a warm sandbox (calls run in one of their own for"
                           " %.0f s): %s", FAILED_COLD_FOR_S, exc)
            with self._lock:
                self._cold[fingerprint] = time.monotonic() + FAILED_COLD_FOR_S
        with self._lock:
            self._starting -= 1
            if sandbox is not None:
                self._busy.add(sandbox)
                self.started += 1
        if sandbox is not None:
            self._ensure_reaper()
        return sandbox

    def _give_back(self, sandbox: WarmSandbox, *, keep: bool) -> None:
        with self._lock:
            self._busy.discard(sandbox)
            keep = keep and not sandbox.retired and sandbox.alive()
            if keep:
                self._idle.append(sandbox)
        if not keep:
            sandbox.close()

    # -- retiring ---------------------------------------------------------------------------

    def retire(self, *, team_id: int | None = None, version_id: int | None = None,
               keys: Iterable[WarmKey] | None = None) -> int:
        """Stop the matching sandboxes now (a busy one when its call ends); how many."""
        chosen = set(keys) if keys is not None else None

        def matches(key: WarmKey) -> bool:
            if chosen is not None:
                return key in chosen
            return ((team_id is None or key.team_id == team_id)
                    and (version_id is None or key.version_id == version_id))

        with self._lock:
            stopping = [s for s in self._idle if matches(s.key)]
            self._idle = [s for s in self._idle if s not in stopping]
            for sandbox in self._busy:
                if matches(sandbox.key):
                    sandbox.retired = True
                    stopping.append(sandbox)
        for sandbox in stopping:
            if sandbox not in self._busy:
                sandbox.close()
        return len(stopping)

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            for sandbox in self._busy:
                sandbox.retired = True
            self._cold.clear()
        for sandbox in idle:
            sandbox.close()

    def describe(self) -> list[dict[str, object]]:
        """The pool's sandboxes, for tests and the benchmark (no secret is in any of it)."""
        with self._lock:
            every = [(s, "idle") for s in self._idle] + [(s, "busy") for s in self._busy]
        return [{"team_id": s.key.team_id, "version_id": s.key.version_id, "pid": s.pid,
                 "calls": s.calls, "state": state, "alive": s.alive()} for s, state in every]

    # -- the reaper ---------------------------------------------------------------------------

    def _ensure_reaper(self) -> None:
        with self._lock:
            if self._reaper is not None and self._reaper.is_alive():
                return
            self._reaper = threading.Thread(target=self._reap_forever, daemon=True,
                                            name="warm-sandbox-reaper")
            self._reaper.start()

    def _reap_forever(self) -> None:
        while os.getpid() == self.owner_pid:
            self._wake.wait(warm.RETIRE_CHECK_S)
            self._wake.clear()
            try:
                self.reap()
            except Exception:  # the reaper must go on; the next round tries again
                logger.exception("the warm sandboxes' reaper failed")

    def reap(self) -> None:
        """Stop idle sandboxes past the idle time, dead ones, and those no longer wanted."""
        idle_s = warm.configured().idle_s
        now = time.monotonic()
        with self._lock:
            stopping = [s for s in self._idle
                        if now - s.last_used > idle_s or not s.alive()]
            self._idle = [s for s in self._idle if s not in stopping]
            keys = {s.key for s in self._idle} | {s.key for s in self._busy}
        for sandbox in stopping:
            sandbox.close()
        wanted = _wanted
        if wanted is not None and keys:
            unwanted = keys - wanted(keys)
            if unwanted:
                self.retire(keys=unwanted)


_pool: Pool | None = None
_pool_lock = threading.Lock()
_wanted: Wanted | None = None


def _close_at_exit() -> None:
    if _pool is not None and _pool.owner_pid == os.getpid():
        _pool.close_all()


atexit.register(_close_at_exit)  # their workdirs unmounted (a process killed: the next sweeps)


def pool() -> Pool:
    """This process's pool (a forked copy gets a new, empty one)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.owner_pid != os.getpid():
            _pool = Pool()
        return _pool


def run(key: WarmKey, files: Mapping[str, str | bytes], **options: Any) -> RunResult | None:
    return pool().run(key, files, **options)


def retire(**options: Any) -> int:
    return pool().retire(**options)


def set_wanted(wanted: Wanted | None) -> None:
    """Who says which keys may still be warm (the tools app: the activation in force, not
    disabled, warm sandboxes on); asked by every process's reaper."""
    global _wanted
    _wanted = wanted
