"""Retry policy: exponential backoff with jitter, only for errors that retrying can fix."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from autocoder.llm.types import LLMError

T = TypeVar("T")
logger = logging.getLogger("autocoder.llm")

MAX_DELAY_S = 30.0


def backoff_delay(
    attempt: int, *, base_delay_s: float, max_delay_s: float = MAX_DELAY_S,
    retry_after_s: float | None = None,
) -> float:
    """Seconds to wait before retry number `attempt + 1` (attempt counts from 0).

    "Equal jitter": half the exponential step is fixed, half random, so workers that failed
    together do not retry together, yet every wait still grows.
    """
    step = min(max_delay_s, base_delay_s * 2**attempt)
    delay = step / 2 + random.uniform(0, step / 2)
    if retry_after_s is not None:
        # The server knows when it will take us again; never ask sooner, never wait unbounded.
        delay = max(delay, min(retry_after_s, max_delay_s))
    return delay


def with_retries(
    fn: Callable[[], T], *, max_retries: int, base_delay_s: float = 0.5,
    max_delay_s: float = MAX_DELAY_S, sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None, clock: Callable[[], float] = time.monotonic,
) -> T:
    """Call `fn`; on a retryable LLMError try again up to `max_retries` more times.

    A non-retryable error is raised at once, and so is one whose retry could not start before
    `deadline` (a `clock()` value). The error finally raised carries `attempts`.
    """
    attempt = 0
    while True:
        try:
            return fn()
        except LLMError as error:
            error.attempts = attempt + 1
            if not error.retryable or attempt >= max_retries:
                raise
            delay = backoff_delay(attempt, base_delay_s=base_delay_s, max_delay_s=max_delay_s,
                                  retry_after_s=error.retry_after_s)
            if deadline is not None and clock() + delay >= deadline:
                logger.warning("llm attempt %d failed (%s: %s); no retry, the deadline "
                               "comes first", attempt + 1, type(error).__name__, error)
                raise
            logger.warning("llm attempt %d failed (%s: %s); retrying in %.2fs",
                           attempt + 1, type(error).__name__, error, delay)
            sleep(delay)
            attempt += 1
