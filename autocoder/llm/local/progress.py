"""Progress of a download or of the runtime install: a small JSON file plus a live event.

The file is for pages opened later and for other processes (the worker writes, the web process
reads); the event, sent to the staff-only websocket group, makes open pages refresh at once.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Websocket group of the staff who watch the Model page (autocoder.llm.local.consumers).
GROUP = "admin.local-models"

QUEUED, DOWNLOADING, VERIFYING, DONE, FAILED = "queued", "downloading", "verifying", "done", \
    "failed"
INSTALLING = "installing"
ACTIVE_STATES = (QUEUED, DOWNLOADING, VERIFYING, INSTALLING)
# Reporting more often than this only costs: the page re-fetches at most about 4 times a second.
REPORT_EVERY_S = 0.5


@dataclass
class Progress:
    """Where one download (or the runtime install, `name` = "runtime") stands."""

    name: str
    state: str
    url: str = ""
    bytes_done: int = 0
    bytes_total: int | None = None
    speed_bps: float = 0.0
    message: str = ""  # plain words: what went wrong, or a note
    sha256: str = ""  # expected while downloading, verified once done
    checksum_source: str = ""
    use_when_done_by: int | None = None  # the admin who asked to use the model once downloaded
    percent_hint: float | None = None  # the install's own progress (compiler's [ 45%])
    lines: list[str] = field(default_factory=list)  # the install's last output lines
    updated_at: float = 0.0
    started_at: float = 0.0  # when the install began (the page shows how long it has run)

    @property
    def elapsed_minutes(self) -> int | None:
        return int((time.time() - self.started_at) // 60) if self.started_at else None

    @property
    def percent(self) -> float | None:
        if self.percent_hint is not None:
            return self.percent_hint
        if not self.bytes_total:
            return None
        return min(100.0, 100.0 * self.bytes_done / self.bytes_total)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    def event(self) -> dict[str, object]:
        """The websocket payload: enough for a page to know what changed, in plain words."""
        return {"kind": f"local_model.{self.state}",
                "data": {"name": self.name, "state": self.state, "bytes_done": self.bytes_done,
                         "bytes_total": self.bytes_total, "percent": self.percent,
                         "message": f"{self.name}: {self.state}."}}


def read(path: Path) -> Progress | None:
    """The progress stored at `path`, or None when there is none (or it is unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        return None
    known = {f.name for f in fields(Progress)}
    try:
        return Progress(**{key: value for key, value in data.items() if key in known})
    except TypeError:
        return None


def write(path: Path, progress: Progress) -> Progress:
    """Store `progress` atomically (readers never see half a file) and tell open pages."""
    progress = replace(progress, updated_at=time.time())
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(asdict(progress)))
    os.replace(temporary, path)
    publish(progress)
    return progress


def publish(progress: Progress) -> None:
    # Progress must never break the download: from the shell Redis may not be running.
    try:
        from autocoder import realtime

        realtime.publish(GROUP, progress.event())
    except Exception:  # noqa: BLE001
        logger.debug("could not publish local model progress", exc_info=True)


class Reporter:
    """Writes progress as it changes: every state change, and byte counts at most every 0.5 s."""

    def __init__(self, path: Path, start: Progress,
                 on_progress: Callable[[Progress], None] | None = None) -> None:
        self.path, self.on_progress = path, on_progress
        self.current = start
        self._last_write = 0.0
        self._speed_mark = (time.monotonic(), start.bytes_done)
        self.report(force=True)

    def update(self, *, force: bool = False, **changes: Any) -> Progress:
        state_changed = "state" in changes and changes["state"] != self.current.state
        self.current = replace(self.current, **changes)
        self.report(force=force or state_changed)
        return self.current

    def bytes(self, done: int, total: int | None) -> None:
        self.current = replace(self.current, bytes_done=done, bytes_total=total)
        self.report()

    def report(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_write < REPORT_EVERY_S:
            return
        mark_time, mark_bytes = self._speed_mark
        if now > mark_time and self.current.bytes_done >= mark_bytes:
            speed = (self.current.bytes_done - mark_bytes) / (now - mark_time)
            self.current = replace(self.current, speed_bps=round(speed, 1))
        self._speed_mark = (now, self.current.bytes_done)
        self._last_write = now
        self.current = write(self.path, self.current)
        if self.on_progress:
            self.on_progress(self.current)
