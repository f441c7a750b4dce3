"""Retry policy: exponential backoff with jitter, retrying only what can succeed next time."""

from __future__ import annotations

import pytest

from autocoder.llm import (
    LLMAuthError,
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    backoff_delay,
    with_retries,
)


class Flaky:
    """Fails with the given errors in turn, then answers."""

    def __init__(self, *errors: LLMError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_the_error_types_say_whether_retrying_can_help() -> None:
    assert all(e.retryable for e in (LLMTimeout(), LLMRateLimited(), LLMServerError(),
                                     LLMConnectionError()))
    assert not any(e.retryable for e in (LLMBadRequest(), LLMAuthError(), LLMError()))


def test_transient_errors_are_retried_until_success() -> None:
    waits: list[float] = []
    flaky = Flaky(LLMServerError("500"), LLMTimeout("slow"), LLMRateLimited("429"))
    assert with_retries(flaky, max_retries=3, base_delay_s=0.1, sleep=waits.append) == "ok"
    assert flaky.calls == 4 and len(waits) == 3


def test_a_permanent_error_is_raised_at_once() -> None:
    waits: list[float] = []
    flaky = Flaky(LLMBadRequest("400"))
    with pytest.raises(LLMBadRequest) as caught:
        with_retries(flaky, max_retries=5, sleep=waits.append)
    assert flaky.calls == 1 and waits == [] and caught.value.attempts == 1


def test_gives_up_after_max_retries_and_reports_the_attempts() -> None:
    flaky = Flaky(*[LLMServerError("boom")] * 10)
    with pytest.raises(LLMServerError) as caught:
        with_retries(flaky, max_retries=2, base_delay_s=0.01, sleep=lambda s: None)
    assert flaky.calls == 3 and caught.value.attempts == 3


def test_zero_retries_means_one_attempt() -> None:
    flaky = Flaky(LLMTimeout("slow"))
    with pytest.raises(LLMTimeout):
        with_retries(flaky, max_retries=0, sleep=lambda s: None)
    assert flaky.calls == 1


def test_other_exceptions_are_not_retried() -> None:
    calls = []

    def broken() -> str:
        calls.append(1)
        raise KeyError("bug")

    with pytest.raises(KeyError):
        with_retries(broken, max_retries=3, sleep=lambda s: None)
    assert len(calls) == 1


def test_waits_grow_exponentially_with_jitter_and_are_capped() -> None:
    for attempt in range(8):
        step = min(4.0, 0.5 * 2**attempt)
        delays = {backoff_delay(attempt, base_delay_s=0.5, max_delay_s=4.0) for _ in range(50)}
        assert all(step / 2 <= d <= step for d in delays)
        assert len(delays) > 1  # jittered, so workers that failed together spread out


def test_a_server_retry_after_hint_is_honoured_but_bounded() -> None:
    assert backoff_delay(0, base_delay_s=0.1, retry_after_s=3.0) >= 3.0
    assert backoff_delay(0, base_delay_s=0.1, max_delay_s=5.0, retry_after_s=3600) == 5.0
    waits: list[float] = []
    flaky = Flaky(LLMRateLimited("429", retry_after_s=2.0))
    with_retries(flaky, max_retries=1, base_delay_s=0.01, sleep=waits.append)
    assert waits[0] >= 2.0


def test_no_retry_starts_when_the_deadline_comes_first() -> None:
    clock = [100.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    flaky = Flaky(*[LLMServerError("503")] * 5)
    with pytest.raises(LLMServerError) as caught:
        with_retries(flaky, max_retries=5, base_delay_s=1.0, sleep=sleep,
                     deadline=101.2, clock=lambda: clock[0])
    # The first wait (0.5-1 s) fits before the deadline, the second (1-2 s) does not.
    assert flaky.calls == 2 and caught.value.attempts == 2
