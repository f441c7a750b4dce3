"""Loading the reference docs in a background thread, on first need, once per process; and
never leaving that thread inside the embedding model when the process exits.

A run must not wait minutes for the first embedding of a new runtime, so the first prompt that
wants the reference starts the load here and goes without it (docs/engine.md, "Reference
docs"). The thread stops when asked, between slices of its work, keeping nothing half-done:

- a command that ends its process once its work is done (`manage.py generate`) settles the
  load first: `load_settle` waits for it (as long as the command was told), then stops it and
  says which happened;
- any other process stops it at exit (`atexit`): a thread still running the model's native
  code while the interpreter tears down aborts the process ("terminate called without an
  active exception", exit code 134) after work that succeeded.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from autocoder.lessons.embedder import embedder_identity
from autocoder.reference.loading import LoadReport, LoadStopped, load_reference, reference_path

logger = logging.getLogger(__name__)

# How long a process that exits waits for the load to reach its next stopping point (a slice
# of embedding takes seconds; loading the model itself, which cannot be cut short, a few more).
EXIT_STOP_S = 60.0
LOAD_LATER = "`python manage.py reference_load` loads them"


@dataclass
class _Load:
    path: Path
    stop: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    report: LoadReport | None = None
    problem: str = ""  # why it failed, or how it was stopped
    stopped: bool = False
    thread: threading.Thread | None = None


_loads: dict[tuple[str, str], _Load | None] = {}  # None: nothing to load (no reference.json)
_lock = threading.Lock()


def ensure_loaded() -> None:
    """Start loading the reference on first need, once per process, in a background thread
    (REFERENCE_AUTOLOAD=False leaves it to `manage.py reference_load`); its prompts go without
    reference docs until they are there. Never raises."""
    if not getattr(settings, "REFERENCE_AUTOLOAD", True):
        return
    path = reference_path()
    key = (str(path), embedder_identity())
    with _lock:
        if key in _loads:
            return
        if not path.exists():
            _loads[key] = None
            logger.info("no reference docs at %s (the runtime's build writes them)", path)
            return
        load = _loads[key] = _Load(path=path)
        load.thread = threading.Thread(target=_load_in_background, args=(load,), daemon=True,
                                       name="reference-load")
        load.thread.start()


def _load_in_background(load: _Load) -> None:
    from django.db import close_old_connections

    try:
        load.report = load_reference(path=load.path, should_stop=load.stop.is_set)
    except LoadStopped:
        load.stopped = True
        logger.info("the reference docs load was stopped; %s", LOAD_LATER)
    except Exception as exc:
        load.problem = f"{type(exc).__name__}: {exc}"
        logger.warning("loading the reference docs failed (%s); prompts go without them",
                       load.problem)
    else:
        if load.report.loaded:
            logger.info("reference docs loaded: %s (%d entries, %.1f s)",
                        ", ".join(load.report.loaded), load.report.entries,
                        load.report.seconds)
    finally:
        close_old_connections()
        load.done.set()


@dataclass(frozen=True)
class Settled:
    """How this process's background load ended. `state`: loaded, already (loaded before),
    stopped, failed, off (REFERENCE_AUTOLOAD=0), missing (no reference.json), none (never
    started here)."""

    state: str
    text: str
    entries: int = 0
    seconds: float = 0.0


def load_running() -> bool:
    """Whether this process's background load is still at work."""
    return any(load is not None and not load.done.is_set() for load in _current())


def load_settle(*, wait_s: float | None) -> Settled:
    """Let this process's background load finish within `wait_s` seconds (None: however long
    it takes), then stop it if it has not: what a command does before its process exits.
    Ctrl-C while waiting stops it too."""
    if not getattr(settings, "REFERENCE_AUTOLOAD", True):
        return Settled("off", f"not loaded here (REFERENCE_AUTOLOAD is off); {LOAD_LATER}")
    key = (str(reference_path()), embedder_identity())
    with _lock:
        if key not in _loads:
            return Settled("none", f"not asked for here; {LOAD_LATER}")
        load = _loads[key]
    if load is None:
        return Settled("missing", f"none at {reference_path()}: the plugin runtime's build "
                                  "writes them (`make run`, or `python -m autocoder.runtime."
                                  "build`)")
    try:
        load.done.wait(wait_s)
    except KeyboardInterrupt:
        logger.info("interrupted while waiting for the reference docs")
    if not load.done.is_set():
        _stop(load, EXIT_STOP_S)
    return _settled(load)


def _settled(load: _Load) -> Settled:
    took = time.monotonic() - load.started
    if load.stopped or not load.done.is_set():
        return Settled("stopped", f"the load was stopped after {took:.0f} s, before it was "
                                  f"done (nothing half-loaded is kept); {LOAD_LATER}",
                       seconds=took)
    if load.problem:
        return Settled("failed", f"the load failed ({load.problem}); {LOAD_LATER} and says "
                                 "why", seconds=took)
    report = load.report or LoadReport()
    entries = _entries()
    if report.loaded:
        return Settled("loaded", f"loaded: {entries} entries ({', '.join(report.loaded)}) in "
                                 f"{report.seconds:.0f} s", entries=entries, seconds=took)
    return Settled("already", f"already loaded: {entries} entries", entries=entries,
                   seconds=took)


def _entries() -> int:
    from autocoder.reference.models import ReferenceEntry

    return ReferenceEntry.objects.filter(
        reference_set__embedded_with=embedder_identity()).count()


def _current() -> list[_Load | None]:
    with _lock:
        return list(_loads.values())


def _stop(load: _Load, timeout_s: float) -> None:
    load.stop.set()
    if not load.done.wait(timeout_s):
        logger.warning("the reference docs load did not stop within %.0f s", timeout_s)


@atexit.register
def _stop_at_exit() -> None:
    """atexit runs before the interpreter tears down, while the thread still runs normally:
    it is told to stop and awaited, so it is never inside the model at the teardown."""
    for load in _current():
        if load is not None and not load.done.is_set():
            logger.warning("stopping the reference docs load as the process exits; %s",
                           LOAD_LATER)
            _stop(load, EXIT_STOP_S)
