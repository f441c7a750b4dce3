"""The loop detector: notices from the iteration history that a run is stuck
(docs/engine.md, "Loop detector and escapes").

Each pattern looks only at the latest iterations, and only fires when the latest iteration is
itself part of the pattern, so a problem that has already gone away is not reported again.

| type              | fires when (within the iterations after `since`)                          |
|-------------------|---------------------------------------------------------------------------|
| repeated_error    | the latest non-empty error signature occurs 3 times in the last 4         |
| no_progress       | the last 3 have the same code, or the same pass count                     |
| test_failure_loop | the last 5 ran the tests and failed with the same failing set             |
| oscillation       | the latest code was seen 2+ iterations back and the one before differs   |
| identical_replies | the last 2 model replies are identical                                    |

repeated_error allows one different iteration in the window ("3 of the last 4", not necessarily
consecutive): a model that fixes one thing, breaks it again and trips on the same error is as
stuck as one that repeats it back to back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from autocoder.engine.states import Checkpoint

DETECTION_TYPES: tuple[str, ...] = (
    "repeated_error", "no_progress", "test_failure_loop", "oscillation", "identical_replies",
)

REPEATED_ERROR_TIMES = 3
REPEATED_ERROR_WINDOW = 4
NO_PROGRESS_ITERATIONS = 3
TEST_FAILURE_LOOP_RUNS = 5
IDENTICAL_REPLIES_TIMES = 2
MAX_SIGNATURE_CHARS = 300
# The test outcomes that count as failing (the detector's failing sets, the loop's failures).
FAILING = frozenset({"failed", "error"})


@dataclass(frozen=True)
class IterationSnapshot:
    number: int
    code_hash: str
    pass_count: int
    failing: frozenset[str]
    error_signature: str
    reply_hash: str
    tests_ran: bool


@dataclass(frozen=True)
class Detection:
    type: str
    signature: str
    confidence: float
    occurrences: int
    iteration: int


def snapshot(it: Checkpoint) -> IterationSnapshot:
    """What the detector reads of a stored iteration."""
    outcomes = (it.test_report or {}).get("outcomes", [])
    return IterationSnapshot(
        number=it.number, code_hash=it.code_hash,
        pass_count=sum(o["outcome"] == "passed" for o in outcomes),
        failing=frozenset(o["nodeid"] for o in outcomes if o["outcome"] in FAILING),
        error_signature=it.error_signature, reply_hash=it.reply_hash, tests_ran=it.tests_ran,
    )


def detect(history: Sequence[IterationSnapshot], *, since: int = 0) -> list[Detection]:
    """What is wrong at the latest iteration, most confident first; [] when nothing is."""
    window = sorted((s for s in history if s.number > since), key=lambda s: s.number)
    if not window:
        return []
    found = [d for check in _CHECKS if (d := check(window)) is not None]
    return sorted(found, key=lambda d: (-d.confidence, DETECTION_TYPES.index(d.type)))


def _confidence(base: float, occurrences: int, threshold: int, step: float = 0.05) -> float:
    # Seen exactly as often as the threshold -> `base`; every further repeat adds certainty.
    return round(min(0.99, base + step * max(0, occurrences - threshold)), 3)


def _repeated_error(window: list[IterationSnapshot]) -> Detection | None:
    latest = window[-1]
    signature = latest.error_signature
    recent = window[-REPEATED_ERROR_WINDOW:]
    if not signature or sum(s.error_signature == signature for s in recent) < REPEATED_ERROR_TIMES:
        return None
    total = sum(s.error_signature == signature for s in window)
    return Detection("repeated_error", signature[:MAX_SIGNATURE_CHARS],
                     _confidence(0.7, total, REPEATED_ERROR_TIMES), total, latest.number)


def _no_progress(window: list[IterationSnapshot]) -> Detection | None:
    latest = window[-1]
    same_code = _trailing_run(window, lambda s: s.code_hash)
    same_passes = _trailing_run(window, lambda s: s.pass_count)
    if same_code >= NO_PROGRESS_ITERATIONS:
        # Unchanged code is certain to be stuck; an unchanged pass count behind changing code is
        # only likely to be.
        return Detection("no_progress", f"code unchanged: {latest.code_hash[:16]}",
                         _confidence(0.85, same_code, NO_PROGRESS_ITERATIONS), same_code,
                         latest.number)
    if same_passes >= NO_PROGRESS_ITERATIONS:
        return Detection("no_progress", f"pass count stuck at {latest.pass_count}",
                         _confidence(0.6, same_passes, NO_PROGRESS_ITERATIONS), same_passes,
                         latest.number)
    return None


def _test_failure_loop(window: list[IterationSnapshot]) -> Detection | None:
    latest = window[-1]
    if not latest.tests_ran or not latest.failing:
        return None
    run = _trailing_run(window, lambda s: s.failing if s.tests_ran else None)
    if run < TEST_FAILURE_LOOP_RUNS:
        return None
    return Detection("test_failure_loop", failing_signature(latest.failing),
                     _confidence(0.75, run, TEST_FAILURE_LOOP_RUNS), run, latest.number)


def _oscillation(window: list[IterationSnapshot]) -> Detection | None:
    if len(window) < 3:
        return None
    latest, previous = window[-1], window[-2]
    if not latest.code_hash or previous.code_hash == latest.code_hash:
        return None
    if not any(s.code_hash == latest.code_hash for s in window[:-2]):
        return None
    seen = sum(s.code_hash == latest.code_hash for s in window)
    # The pair, in a fixed order, so A,B,A and B,A,B are the same back-and-forth.
    pair = sorted((latest.code_hash[:16], previous.code_hash[:16]))
    return Detection("oscillation", f"code flips between {pair[0]} and {pair[1]}",
                     _confidence(0.7, seen, 2, step=0.1), seen, latest.number)


def _identical_replies(window: list[IterationSnapshot]) -> Detection | None:
    latest = window[-1]
    if not latest.reply_hash:
        return None
    run = _trailing_run(window, lambda s: s.reply_hash)
    if run < IDENTICAL_REPLIES_TIMES:
        return None
    return Detection("identical_replies", f"reply {latest.reply_hash[:16]}",
                     _confidence(0.8, run, IDENTICAL_REPLIES_TIMES), run, latest.number)


def _trailing_run(window: list[IterationSnapshot],
                  key: Callable[[IterationSnapshot], object]) -> int:
    """How many of the latest snapshots share the latest one's key (None never matches)."""
    last = key(window[-1])
    if last is None:
        return 0
    run = 0
    for snapshot in reversed(window):
        if key(snapshot) != last:
            break
        run += 1
    return run


def failing_signature(failing: frozenset[str]) -> str:
    """A readable, bounded signature of a failing set: a few test names and a digest of all."""
    names = sorted(failing)
    digest = hashlib.sha256("\n".join(names).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    shown = ", ".join(name.rsplit("::", 1)[-1][:80] for name in names[:3])
    more = f" (+{len(names) - 3} more)" if len(names) > 3 else ""
    return f"{len(names)} failing: {shown}{more} #{digest}"


_CHECKS: tuple[Callable[[list[IterationSnapshot]], Detection | None], ...] = (
    _repeated_error, _no_progress, _test_failure_loop, _oscillation, _identical_replies,
)
