"""Anthropic provider against a local fake HTTP server standing in for api.anthropic.com.

No hosted API is reachable from here, so the boundary is faked: a real http.server in a thread
answers as the Messages API documents, and the tests check the request the official SDK sends
through our provider, the usage mapping and how errors are classified.
"""

from __future__ import annotations

import json

import pytest

from autocoder.llm import (
    CallRecord,
    LLMAuthError,
    LLMBadRequest,
    LLMConfigError,
    LLMRateLimited,
    Message,
    ProviderConfig,
)
from autocoder.llm.anthropic_provider import AnthropicProvider
from tests.llm.fakeserver import FakeServer, Reply

KEY = "sk-ant-test-4242"


def message_reply(text: str = "Plan: one command.", **usage: int) -> Reply:
    counts = {"input_tokens": 30, "output_tokens": 7, "cache_creation_input_tokens": 0,
              "cache_read_input_tokens": 0, **usage}
    return Reply(body={"id": "msg_1", "type": "message", "role": "assistant",
                       "model": "claude-test-1", "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": counts,
                       "content": [{"type": "text", "text": text}]})


def api_error(status: int, kind: str, message: str, **headers: str) -> Reply:
    return Reply(status=status, headers=headers,
                 body={"type": "error", "error": {"type": kind, "message": message}})


def provider(server: FakeServer, **overrides: object) -> AnthropicProvider:
    config = {"provider": "anthropic", "model": "claude-test-1", "base_url": server.url,
              "api_key": KEY, "timeout_s": 5.0, "max_retries": 2, **overrides}
    return AnthropicProvider(ProviderConfig(**config), retry_base_delay_s=0.01)  # type: ignore[arg-type]


CONVERSATION = [
    Message("system", "You are the architect."),
    Message("system", "Answer in English."),
    Message("user", "Plan a scheduler."),
    Message("user", "It runs weekly."),
    Message("assistant", "Which day?"),
    Message("user", "Mondays."),
]


def test_request_shape_follows_the_messages_api(fake_server: FakeServer) -> None:
    fake_server.queue(message_reply())
    provider(fake_server).complete(CONVERSATION, role="architect", temperature=0.3)
    [request] = fake_server.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    # SDK generations differ in the header that carries the key; one of them must.
    assert KEY in (request.headers.get("x-api-key"), request.headers.get("authorization", "")[7:])
    assert request.headers["anthropic-version"]
    body = request.body
    assert body["model"] == "claude-test-1"
    assert body["system"] == "You are the architect.\n\nAnswer in English."
    # Consecutive user turns are merged: the API wants strictly alternating roles.
    assert body["messages"] == [
        {"role": "user", "content": "Plan a scheduler.\n\nIt runs weekly."},
        {"role": "assistant", "content": "Which day?"},
        {"role": "user", "content": "Mondays."},
    ]
    assert body["max_tokens"] == 4096
    assert "temperature" not in body  # the current Messages API has no sampling parameters


def test_usage_counts_cached_prompt_tokens_too(fake_server: FakeServer) -> None:
    fake_server.queue(message_reply("ok", input_tokens=10, output_tokens=5,
                                    cache_creation_input_tokens=100,
                                    cache_read_input_tokens=1000))
    records: list[CallRecord] = []
    completion = provider(fake_server).complete(CONVERSATION, role="reviewer", max_tokens=50,
                                                record=records.append)
    assert completion.text == "ok"
    assert (completion.prompt_tokens, completion.completion_tokens) == (1110, 5)
    assert (completion.provider, completion.model) == ("anthropic", "claude-test-1")
    assert records[0].prompt_tokens == 1110 and records[0].attempts == 1
    assert fake_server.requests[0].body["max_tokens"] == 50


def test_streaming_events_build_the_text_and_usage(fake_server: FakeServer) -> None:
    def event(kind: str, data: dict) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}"

    start = {"message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                         "model": "claude-test-1", "stop_reason": None, "stop_sequence": None,
                         "usage": {"input_tokens": 25, "output_tokens": 1}}}
    fake_server.queue(Reply(sse=[
        event("message_start", start),
        event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Mon"}}),
        event("content_block_delta", {"index": 0, "delta": {"type": "text_delta",
                                                            "text": "days"}}),
        event("content_block_stop", {"index": 0}),
        event("message_delta", {"delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": 6}}),
        event("message_stop", {}),
    ]))
    seen: list[str] = []
    completion = provider(fake_server).complete(CONVERSATION, role="analyst",
                                                on_text=seen.append)
    assert seen == ["Mon", "Mondays"]
    assert (completion.text, completion.prompt_tokens, completion.completion_tokens) == (
        "Mondays", 25, 6)
    assert fake_server.requests[0].body["stream"] is True


def test_overloaded_529_is_retried(fake_server: FakeServer) -> None:
    fake_server.queue(api_error(529, "overloaded_error", "Overloaded"), message_reply("fine"))
    records: list[CallRecord] = []
    assert provider(fake_server).complete(CONVERSATION, role="implementer",
                                          record=records.append).text == "fine"
    assert [(r.attempts, r.error is None) for r in records] == [(1, False), (2, True)]
    assert len(fake_server.requests) == 2


def test_invalid_request_is_not_retried(fake_server: FakeServer) -> None:
    fake_server.queue(api_error(400, "invalid_request_error", "prompt is too long"))
    with pytest.raises(LLMBadRequest, match="invalid_request_error: prompt is too long"):
        provider(fake_server).complete(CONVERSATION, role="implementer")
    assert len(fake_server.requests) == 1


def test_bad_key_is_an_auth_error(fake_server: FakeServer) -> None:
    fake_server.queue(api_error(401, "authentication_error", "invalid x-api-key"))
    with pytest.raises(LLMAuthError):
        provider(fake_server).complete(CONVERSATION, role="implementer")
    assert len(fake_server.requests) == 1


def test_rate_limit_is_retryable_and_keeps_the_hint(fake_server: FakeServer) -> None:
    fake_server.queue(api_error(429, "rate_limit_error", "slow down", **{"retry-after": "7"}))
    with pytest.raises(LLMRateLimited) as caught:
        provider(fake_server, max_retries=0).complete(CONVERSATION, role="implementer")
    assert caught.value.retryable and caught.value.retry_after_s == 7.0


def test_a_conversation_must_start_with_the_user(fake_server: FakeServer) -> None:
    with pytest.raises(LLMBadRequest, match="needs a user message"):
        provider(fake_server).complete([Message("system", "s"), Message("assistant", "a")],
                                       role="implementer")
    assert fake_server.requests == []


def test_a_missing_key_is_a_config_error_before_any_request(fake_server: FakeServer) -> None:
    with pytest.raises(LLMConfigError, match="LLM_API_KEY"):
        provider(fake_server, api_key="")


def test_a_reply_held_to_a_schema_is_a_forced_tool_call_read_whole_or_streamed(
        fake_server: FakeServer) -> None:
    from autocoder.engine.reply_formats import SCHEMAS
    from autocoder.llm.types import TOOL, ReplyFormat

    shape = ReplyFormat(TOOL, SCHEMAS["reviewer"])
    verdict = {"reasons": "Fine.", "verdict": "approve"}
    whole = (Reply(body={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": 30, "output_tokens": 9},
        "content": [{"type": "tool_use", "id": "tu_1", "name": "reviewer_verdict",
                     "input": verdict}]}))

    def event(kind: str, data: dict) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}"

    start = {"message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [],
                         "model": "claude-test-1", "stop_reason": None, "stop_sequence": None,
                         "usage": {"input_tokens": 25, "output_tokens": 1}}}
    pieces = ['{"reasons": "Fi', 'ne.", "verdict": "approve"}']
    streamed_reply = Reply(sse=[
        event("message_start", start),
        event("content_block_start", {"index": 0, "content_block": {
            "type": "tool_use", "id": "tu_2", "name": "reviewer_verdict", "input": {}}}),
        *(event("content_block_delta", {"index": 0, "delta": {
            "type": "input_json_delta", "partial_json": piece}}) for piece in pieces),
        event("content_block_stop", {"index": 0}),
        event("message_delta", {"delta": {"stop_reason": "tool_use", "stop_sequence": None},
                                "usage": {"output_tokens": 9}}),
        event("message_stop", {}),
    ])
    fake_server.queue(whole, streamed_reply)
    completion = provider(fake_server).complete(CONVERSATION, role="reviewer",
                                                reply_format=shape)
    assert json.loads(completion.text) == verdict and completion.reply_form == "tool"
    body = fake_server.requests[0].body
    assert body["tools"][0]["name"] == "reviewer_verdict"
    assert body["tools"][0]["input_schema"] == SCHEMAS["reviewer"].schema
    assert body["tool_choice"] == {"type": "tool", "name": "reviewer_verdict"}

    seen: list[str] = []
    streamed = provider(fake_server).complete(CONVERSATION, role="reviewer",
                                              on_text=seen.append, reply_format=shape)
    assert seen and json.loads(streamed.text) == verdict and seen[-1] == streamed.text
