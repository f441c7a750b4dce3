"""Streamed replies: a slow model that keeps writing is never cut by the idle timeout, a model
that goes silent is stopped once and not asked again, and a caller's deadline keeps what came.

The server is the fake OpenAI-compatible / Anthropic HTTP server of tests/llm/fakeserver.py on
loopback, standing in for model servers we cannot run at these speeds here (a real one writes
~20 tokens/s: test_real_wire.py in tests/engine runs one). It streams its events with real
pauses between them, so every timing below is real time.
"""

from __future__ import annotations

import json
import time

import pytest

from autocoder.llm import (
    CallRecord,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
)
from autocoder.llm.anthropic_provider import AnthropicProvider
from autocoder.llm.openai_compat import OpenAICompatibleProvider
from autocoder.llm.types import CAPPED, DEADLINE, FINISHED
from tests.llm.fakeserver import FakeServer, Reply

ASK = [Message("system", "Write code."), Message("user", "A scheduler plugin, please.")]
DONE = "data: [DONE]"


def chunk(content: str | None = None, *, finish: str | None = None,
          usage: dict | None = None) -> str:
    choices = [] if content is None and finish is None else [
        {"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}]
    return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1,
                                  "model": "served-model", "choices": choices, "usage": usage})


def slow_reply(words: int, *, every_s: float, finish: str = "stop") -> Reply:
    """A model writing `words` one-word chunks, one every `every_s` seconds, then its usage."""
    events: list[str | float] = []
    for number in range(words):
        events += [every_s, chunk(f"w{number} ")]
    events += [chunk(finish=finish),
               chunk(usage={"prompt_tokens": 20, "completion_tokens": words,
                            "total_tokens": 20 + words}), DONE]
    return Reply(sse=events)


def openai(server: FakeServer, **overrides: object) -> OpenAICompatibleProvider:
    config = {"provider": "openai", "model": "served-model", "base_url": server.url + "/v1",
              "timeout_s": 0.5, "max_retries": 2, **overrides}
    return OpenAICompatibleProvider(ProviderConfig(**config),  # type: ignore[arg-type]
                                    retry_base_delay_s=0.01)


def stream(provider: OpenAICompatibleProvider | AnthropicProvider, **kwargs: object):
    records: list[CallRecord] = []
    seen: list[str] = []
    completion = provider.complete(ASK, role="implementer", record=records.append,
                                   on_text=seen.append, **kwargs)  # type: ignore[arg-type]
    return completion, records, seen


def test_a_slow_reply_that_keeps_streaming_outlasts_the_idle_timeout(
        fake_server: FakeServer) -> None:
    fake_server.queue(slow_reply(12, every_s=0.15))
    started = time.monotonic()
    completion, records, seen = stream(openai(fake_server, timeout_s=0.5))
    # 1.8 s of writing against a 0.5 s idle timeout: never silent that long, so never cut.
    assert time.monotonic() - started >= 1.8
    assert completion.text == "".join(f"w{n} " for n in range(12))
    assert (completion.completion_tokens, completion.finish_reason) == (12, FINISHED)
    assert len(seen) == 12 and len(fake_server.requests) == 1
    assert [(r.attempts, r.error) for r in records] == [(1, None)]


def test_a_server_that_goes_silent_mid_reply_times_out_once_and_is_not_retried(
        fake_server: FakeServer) -> None:
    fake_server.queue(Reply(sse=[chunk("def "), chunk("plan"), 5.0, chunk("ned"), DONE]))
    started = time.monotonic()
    with pytest.raises(LLMTimeout, match="went silent for 0.5s after 2 tokens") as caught:
        stream(openai(fake_server, timeout_s=0.5, max_retries=2))
    assert time.monotonic() - started < 2.5  # the idle timeout, not the server's 5 s pause
    # It was answering: trying again would only spend the same time twice, so neither the
    # provider nor the step (which reads `retryable`) asks again.
    assert not caught.value.retryable
    assert len(fake_server.requests) == 1


def test_the_tokens_of_a_reply_that_broke_off_are_recorded(fake_server: FakeServer) -> None:
    fake_server.queue(Reply(sse=[chunk("one "), chunk("two "), chunk("three "), 5.0, DONE]))
    records: list[CallRecord] = []
    with pytest.raises(LLMTimeout):
        openai(fake_server).complete(ASK, role="tester", record=records.append,
                                     on_text=lambda text: None)
    [record] = records
    assert record.error.startswith("LLMTimeout") and record.attempts == 1
    assert record.completion_tokens == 3 and record.prompt_tokens > 0  # paid for: generated


def test_keep_alive_pings_do_not_hide_a_silent_model(fake_server: FakeServer) -> None:
    # llama-cpp-python's server sends an SSE comment every 15 s whatever the model does.
    pings: list[str | float] = [x for _ in range(25) for x in (0.2, ": ping")]
    fake_server.queue(Reply(sse=[chunk("x"), *pings, chunk("y"), DONE]))
    started = time.monotonic()
    with pytest.raises(LLMTimeout, match="went silent"):
        stream(openai(fake_server, timeout_s=0.5))
    assert time.monotonic() - started < 2.0  # not the 5 s of pings


def test_no_first_token_within_the_idle_timeout_may_be_retried(fake_server: FakeServer) -> None:
    fake_server.queue(Reply(delay_s=2.0, sse=[chunk("late"), DONE]), slow_reply(2, every_s=0))
    completion, records, _ = stream(openai(fake_server, timeout_s=0.5, max_retries=1))
    # Nothing had arrived (a server restarting, or busy with another request): worth one more.
    assert completion.text == "w0 w1 "
    assert [r.error.split(":")[0] if r.error else None for r in records] == ["LLMTimeout", None]


def test_at_the_deadline_reading_stops_and_the_text_so_far_is_the_reply(
        fake_server: FakeServer) -> None:
    fake_server.queue(slow_reply(30, every_s=0.1))
    started = time.monotonic()
    completion, records, seen = stream(openai(fake_server, timeout_s=5),
                                       deadline=time.monotonic() + 1.0)
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 1.6
    assert completion.finish_reason == DEADLINE
    assert completion.text == seen[-1] and completion.text.startswith("w0 w1 ")
    words = len(completion.text.split())
    assert 5 <= words < 30
    # The server reports usage only at the end; the chunks seen are the estimate.
    assert completion.completion_tokens == words and completion.prompt_tokens > 0
    assert [(r.error, r.completion_tokens) for r in records] == [(None, words)]


def test_a_deadline_before_any_reply_gives_an_empty_reply_without_retrying(
        fake_server: FakeServer) -> None:
    fake_server.queue(Reply(delay_s=3.0, sse=[chunk("late"), DONE]))
    started = time.monotonic()
    completion, records, _ = stream(openai(fake_server, timeout_s=60, max_retries=2),
                                    deadline=time.monotonic() + 0.5)
    assert time.monotonic() - started < 1.5
    assert (completion.text, completion.completion_tokens) == ("", 0)
    assert completion.finish_reason == DEADLINE
    assert len(fake_server.requests) == 1 and len(records) == 1


def test_no_retry_starts_when_its_wait_would_pass_the_deadline(fake_server: FakeServer) -> None:
    fake_server.queue(Reply(status=429, headers={"retry-after": "2"},
                            body={"error": {"message": "slow down"}}),
                      slow_reply(1, every_s=0))
    started = time.monotonic()
    with pytest.raises(LLMRateLimited, match="slow down"):
        stream(openai(fake_server), deadline=time.monotonic() + 1.0)
    assert time.monotonic() - started < 0.5 and len(fake_server.requests) == 1


def test_an_error_event_after_tokens_is_not_retried(fake_server: FakeServer) -> None:
    fake_server.queue(Reply(sse=[chunk("half a "),
                                 'data: {"error": {"message": "model crashed"}}']))
    with pytest.raises(LLMServerError, match="model crashed") as caught:
        stream(openai(fake_server))
    assert not caught.value.retryable and len(fake_server.requests) == 1


def test_a_garbled_event_after_tokens_is_not_retried(fake_server: FakeServer) -> None:
    fake_server.queue(Reply(sse=[chunk("so far "), 'data: {"id": "c", "choices": [{"index"']))
    with pytest.raises(LLMServerError, match="not JSON") as caught:
        stream(openai(fake_server))
    assert not caught.value.retryable and len(fake_server.requests) == 1


def test_a_reply_stopped_by_its_cap_says_so(fake_server: FakeServer) -> None:
    fake_server.queue(slow_reply(3, every_s=0, finish="length"))
    completion, _, _ = stream(openai(fake_server), max_tokens=3)
    assert completion.finish_reason == CAPPED
    assert fake_server.requests[0].body["max_tokens"] == 3


# -- Anthropic: the same rules through its event format ----------------------------------------


def anthropic_event(kind: str, **data: object) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}"


def anthropic_stream(*pieces: str | float) -> Reply:
    start = {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
             "model": "claude-test-1", "stop_reason": None, "stop_sequence": None,
             "usage": {"input_tokens": 25, "output_tokens": 1}}
    events: list[str | float] = [anthropic_event("message_start", message=start)]
    for piece in pieces:
        events.append(piece if isinstance(piece, float) else anthropic_event(
            "content_block_delta", index=0, delta={"type": "text_delta", "text": piece}))
    return Reply(sse=events)


def anthropic(server: FakeServer, **overrides: object) -> AnthropicProvider:
    config = {"provider": "anthropic", "model": "claude-test-1", "base_url": server.url,
              "api_key": "sk-ant-test", "timeout_s": 0.5, "max_retries": 2, **overrides}
    return AnthropicProvider(ProviderConfig(**config),  # type: ignore[arg-type]
                             retry_base_delay_s=0.01)


def test_anthropic_pings_do_not_hide_a_silent_model(fake_server: FakeServer) -> None:
    pings: list[str | float] = [x for _ in range(20) for x in (0.2, anthropic_event("ping"))]
    reply = anthropic_stream("Mon")
    assert reply.sse is not None
    reply.sse += pings
    fake_server.queue(reply)
    with pytest.raises(LLMTimeout, match="sent no text for 0.5s") as caught:
        stream(anthropic(fake_server))
    assert not caught.value.retryable and len(fake_server.requests) == 1


def test_anthropic_keeps_what_came_at_the_deadline(fake_server: FakeServer) -> None:
    fake_server.queue(anthropic_stream(*[x for n in range(30) for x in (0.1, f"w{n} ")]))
    completion, records, _ = stream(anthropic(fake_server, timeout_s=5),
                                    deadline=time.monotonic() + 1.0)
    assert completion.finish_reason == DEADLINE
    assert completion.text.startswith("w0 w1 ") and len(completion.text.split()) < 30
    assert completion.prompt_tokens == 25  # from message_start, already counted by the API
    assert completion.completion_tokens == len(completion.text.split())
    assert records[0].error is None
