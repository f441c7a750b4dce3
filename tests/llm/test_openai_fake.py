"""OpenAI-compatible provider against a local fake HTTP server (http.server in a thread).

The fake stands in for hosted endpoints we cannot reach here; it lets the tests choose exact
failures (500 then 200, 400, 429, 401, a slow reply, a refused connection) and see every request
on the wire. The same provider runs against a real llama.cpp server in test_llama_server.py.
"""

from __future__ import annotations

import socket
import time

import pytest

from autocoder.llm import (
    CallRecord,
    LLMAuthError,
    LLMBadRequest,
    LLMConfigError,
    LLMConnectionError,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
)
from autocoder.llm.openai_compat import OpenAICompatibleProvider, normalize_base_url
from tests.llm.fakeserver import FakeServer, Reply

ASK = [Message("system", "Reply briefly."), Message("user", "Say hi")]


def chat(text: str = "hi there", prompt: int = 12, completion: int = 3) -> Reply:
    return Reply(body={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "served-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    })


def error(status: int, message: str, **headers: str) -> Reply:
    return Reply(status=status, headers=headers,
                 body={"error": {"message": message, "type": "error", "code": status}})


def provider(server: FakeServer, **overrides: object) -> OpenAICompatibleProvider:
    config = {"provider": "openai", "model": "qwen2.5-coder", "base_url": server.url + "/v1",
              "api_key": "sk-test-123", "timeout_s": 5.0, "max_retries": 2, **overrides}
    return OpenAICompatibleProvider(ProviderConfig(**config), retry_base_delay_s=0.01)  # type: ignore[arg-type]


def test_sends_the_chat_completions_request_and_maps_the_reply(fake_server: FakeServer) -> None:
    fake_server.queue(chat("hello!", prompt=21, completion=4))
    completion = provider(fake_server).complete(ASK, role="implementer", max_tokens=64,
                                                temperature=0.2)
    assert completion.text == "hello!"
    assert (completion.prompt_tokens, completion.completion_tokens) == (21, 4)
    assert (completion.model, completion.provider) == ("served-model", "openai")
    [request] = fake_server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == "Bearer sk-test-123"
    assert request.body["model"] == "qwen2.5-coder"
    assert request.body["messages"] == [{"role": "system", "content": "Reply briefly."},
                                        {"role": "user", "content": "Say hi"}]
    assert (request.body["max_tokens"], request.body["temperature"]) == (64, 0.2)


def test_a_500_then_200_is_retried_and_each_attempt_recorded(fake_server: FakeServer) -> None:
    fake_server.queue(error(500, "upstream crashed"), chat("recovered"))
    records: list[CallRecord] = []
    completion = provider(fake_server).complete(ASK, role="tester", record=records.append)
    assert completion.text == "recovered"
    assert len(fake_server.requests) == 2
    failed, call = records  # every attempt is recorded: each one was sent, and may cost
    assert (failed.attempts, failed.error) == (1, "LLMServerError: HTTP 500: upstream crashed")
    assert (call.attempts, call.error, call.role, call.model) == (2, None, "tester",
                                                                  "served-model")
    assert (call.prompt_tokens, call.completion_tokens) == (12, 3)


def test_a_400_is_not_retried(fake_server: FakeServer) -> None:
    fake_server.queue(error(400, "context length exceeded"), chat("never sent"))
    records: list[CallRecord] = []
    with pytest.raises(LLMBadRequest, match="HTTP 400: context length exceeded") as caught:
        provider(fake_server).complete(ASK, role="implementer", record=records.append)
    assert not caught.value.retryable
    assert len(fake_server.requests) == 1
    assert records[0].attempts == 1
    assert records[0].error == "LLMBadRequest: HTTP 400: context length exceeded"


def test_a_server_silent_from_the_start_times_out_and_is_retried(
        fake_server: FakeServer) -> None:
    fake_server.queue(Reply(delay_s=3, body={}))
    records: list[CallRecord] = []
    started = time.monotonic()
    with pytest.raises(LLMTimeout, match="no reply from .* within 0.5s") as caught:
        provider(fake_server, max_retries=1).complete(ASK, role="reviewer", timeout_s=0.5,
                                                      record=records.append)
    elapsed = time.monotonic() - started
    assert 1.0 <= elapsed < 2.5  # two attempts of 0.5s, not the server's 3s each
    assert len(fake_server.requests) == 2
    # Nothing had arrived: perhaps a server restarting, so the step may try again too.
    assert caught.value.retryable
    assert [(r.attempts, r.error.split(":")[0]) for r in records] == [(1, "LLMTimeout"),
                                                                      (2, "LLMTimeout")]


def test_rate_limits_wait_for_retry_after(fake_server: FakeServer) -> None:
    fake_server.queue(error(429, "slow down", **{"retry-after": "0.4"}), chat("ok"))
    started = time.monotonic()
    assert provider(fake_server).complete(ASK, role="analyst").text == "ok"
    assert time.monotonic() - started >= 0.4


def test_server_errors_exhaust_retries_then_raise(fake_server: FakeServer) -> None:
    fake_server.queue(error(503, "overloaded"))
    with pytest.raises(LLMServerError, match="HTTP 503") as caught:
        provider(fake_server, max_retries=2).complete(ASK, role="architect")
    assert caught.value.retryable and caught.value.attempts == 3
    assert len(fake_server.requests) == 3


def test_a_wrong_key_is_an_auth_error_without_retry(fake_server: FakeServer) -> None:
    fake_server.queue(error(401, "Incorrect API key provided"))
    with pytest.raises(LLMAuthError, match="check the API key"):
        provider(fake_server).complete(ASK, role="implementer")
    assert len(fake_server.requests) == 1


def test_an_unreachable_endpoint_is_a_retryable_connection_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = ProviderConfig(provider="openai", model="m", base_url=f"http://127.0.0.1:{port}/v1",
                            max_retries=1)
    records: list[CallRecord] = []
    with pytest.raises(LLMConnectionError, match=f"cannot reach http://127.0.0.1:{port}/v1"):
        OpenAICompatibleProvider(config, retry_base_delay_s=0.01).complete(
            ASK, role="implementer", record=records.append)
    assert [r.attempts for r in records] == [1, 2]


def test_streaming_reports_growing_text_and_usage(fake_server: FakeServer) -> None:
    def chunk(content: str | None, usage: dict | None = None) -> str:
        choices = [] if content is None else [{"index": 0, "delta": {"content": content}}]
        import json
        return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1,
                                      "model": "served-model", "choices": choices,
                                      "usage": usage})

    fake_server.queue(Reply(sse=[chunk("def "), chunk("plugin"), chunk("()"),
                                 chunk(None, {"prompt_tokens": 9, "completion_tokens": 3,
                                              "total_tokens": 12}), "data: [DONE]"]))
    seen: list[str] = []
    completion = provider(fake_server).complete(ASK, role="implementer", on_text=seen.append)
    assert seen == ["def ", "def plugin", "def plugin()"]
    assert completion.text == "def plugin()"
    assert (completion.prompt_tokens, completion.completion_tokens) == (9, 3)
    body = fake_server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_a_reply_without_usage_gets_a_word_estimate(fake_server: FakeServer) -> None:
    reply = chat("one two three")
    reply.body.pop("usage")
    fake_server.queue(reply)
    completion = provider(fake_server).complete(ASK, role="implementer")
    assert (completion.prompt_tokens, completion.completion_tokens) == (4, 3)


def test_a_malformed_reply_is_a_server_error(fake_server: FakeServer) -> None:
    fake_server.queue(Reply(body={"id": "x", "object": "chat.completion", "choices": []}))
    with pytest.raises(LLMServerError, match="malformed"):
        provider(fake_server, max_retries=0).complete(ASK, role="implementer")


def test_a_bare_host_gets_the_v1_path(fake_server: FakeServer) -> None:
    assert normalize_base_url("http://localhost:11434") == "http://localhost:11434/v1"
    assert normalize_base_url("http://vllm:8000/v1") == "http://vllm:8000/v1"
    fake_server.queue(chat())
    provider(fake_server, base_url=fake_server.url).complete(ASK, role="implementer")
    assert fake_server.requests[0].path == "/v1/chat/completions"


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"model": ""}, "needs a model name"),
    ({"base_url": "ftp://example.org/v1"}, "must start with http"),
])
def test_bad_configuration_is_refused_up_front(fake_server: FakeServer, overrides: dict,
                                               expected: str) -> None:
    with pytest.raises(LLMConfigError, match=expected):
        provider(fake_server, **overrides)
