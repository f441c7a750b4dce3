"""Per-process copies of what every viewer of a live group sees (a team's board cards).

Twenty people looking at one board ask the database the same question twenty times; the answer
changes only when something happens to the team, and every such change is announced to the
team's live pages (autocoder/realtime.py), which bumps the group's version first. A copy is
used while the group's version is the one read before the copy was made, and for at most
`max_age_s` whatever happens, which bounds what a change nobody announced can leave behind.
See docs/operating.md, "Processes and load".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from django.db import connection

from autocoder import realtime

T = TypeVar("T")
# More keys than this and the copies start over (teams whose board nobody opens lately go).
MAX_COPIES = 512


@dataclass(frozen=True)
class _Copy(Generic[T]):
    version: int
    made_at: float
    value: T


class SharedCopies(Generic[T]):
    """Copies by key, each valid while its live group's version stays the same."""

    def __init__(self, *, max_age_s: float) -> None:
        self.max_age_s = max_age_s
        self._copies: dict[Hashable, _Copy[T]] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, *, group: str, build: Callable[[], T]) -> T:
        """The copy of `key` if still valid, else `build()` (kept for the next reader). The value
        is shared: callers read it and never change it."""
        # Inside a transaction a reader may see its own writes, not yet committed nor announced.
        if connection.in_atomic_block:
            return build()
        # Read before building: a copy is never newer than the version it is kept under.
        version = realtime.group_version(group)
        if version is None:  # Redis cannot say: build each time, slower but right
            return build()
        now = time.monotonic()
        held = self._copies.get(key)
        if held is not None and held.version == version and now - held.made_at < self.max_age_s:
            return held.value
        value = build()
        with self._lock:
            if len(self._copies) >= MAX_COPIES:
                self._copies.clear()
            self._copies[key] = _Copy(version, now, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._copies.clear()
