"""Any OpenAI-compatible chat endpoint: OpenAI, Ollama, vLLM, llama.cpp server, LM Studio.

Uses the official `openai` SDK with its own retries switched off: the retry policy is ours
(autocoder.llm.retry), shared by every provider and visible in the call record.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import openai

from autocoder.llm.base import (
    BaseProvider,
    Reply,
    TextCallback,
    error_for_status,
    estimate_tokens,
    prompt_text,
    retry_after_seconds,
    server_error,
)
from autocoder.llm.types import (
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMTimeout,
    Message,
    ProviderConfig,
    safe_url,
)

# Local servers (Ollama, llama.cpp, LM Studio) ignore the key, but the SDK insists on one.
PLACEHOLDER_KEY = "no-key"


def normalize_base_url(base_url: str) -> str:
    """`http://host:11434` -> `http://host:11434/v1`: every compatible server serves under /v1."""
    base_url = base_url.strip()
    if base_url and urlsplit(base_url).path in ("", "/"):
        return base_url.rstrip("/") + "/v1"
    return base_url


class OpenAICompatibleProvider(BaseProvider):
    name = "openai"

    def __init__(self, config: ProviderConfig, *, retry_base_delay_s: float = 0.5) -> None:
        super().__init__(config, retry_base_delay_s=retry_base_delay_s)
        if not config.model:
            raise LLMConfigError(
                "the openai provider needs a model name: set LLM_MODEL (or LLM_MODEL_<ROLE>)")
        base_url = normalize_base_url(config.base_url)
        if base_url and urlsplit(base_url).scheme not in ("http", "https"):
            raise LLMConfigError(f"LLM base URL must start with http:// or https://: "
                                 f"{safe_url(base_url)!r}")
        self.base_url = base_url or "https://api.openai.com/v1"
        self._client = openai.OpenAI(api_key=config.api_key or PLACEHOLDER_KEY,
                                     base_url=self.base_url, max_retries=0,
                                     timeout=config.timeout_s)

    def _attempt(self, messages: list[Message], *, role: str, max_tokens: int | None,
                 temperature: float | None, timeout_s: float,
                 on_text: TextCallback | None) -> Reply:
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "timeout": timeout_s,
        }
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if temperature is not None:
            request["temperature"] = temperature
        try:
            if on_text is None:
                return self._reply(self._client.chat.completions.create(**request), messages)
            return self._stream(request, messages, on_text, deadline=time.monotonic() + timeout_s)
        except openai.APIError as error:
            failure = self._translate(error, timeout_s)
        # Raised outside the except block: the SDK error (which may quote the key) is not
        # kept as __context__.
        raise failure

    def _translate(self, error: openai.APIError, timeout_s: float) -> LLMError:
        where = safe_url(self.base_url)
        if isinstance(error, openai.APITimeoutError):
            return LLMTimeout(f"no reply from {where} within {timeout_s:g}s")
        if isinstance(error, openai.APIConnectionError):
            return LLMConnectionError(f"cannot reach {where}: {_cause(error)}")
        if isinstance(error, openai.APIStatusError):
            return error_for_status(error.status_code, _status_message(error),
                                    retry_after_s=retry_after_seconds(error.response.headers))
        # An error event inside a stream, or a body the SDK cannot parse.
        return server_error(str(error))

    def _reply(self, response: Any, messages: list[Message]) -> Reply:
        if not getattr(response, "choices", None):
            raise server_error("no choices in the reply")
        text = response.choices[0].message.content or ""
        return _with_usage(text, response.usage, messages, response.model or self.config.model)

    def _stream(self, request: dict[str, Any], messages: list[Message], on_text: TextCallback,
                *, deadline: float) -> Reply:
        request = {**request, "stream": True, "stream_options": {"include_usage": True}}
        parts: list[str] = []
        usage = None
        model = self.config.model
        with self._client.chat.completions.create(**request) as stream:
            for chunk in stream:
                if time.monotonic() > deadline:
                    # Per-read timeouts never fire while tokens trickle in; the deadline does.
                    raise LLMTimeout(f"reply from {safe_url(self.base_url)} took longer than "
                                     f"{request['timeout']:g}s")
                model = chunk.model or model
                usage = chunk.usage or usage
                if chunk.choices and chunk.choices[0].delta.content:
                    parts.append(chunk.choices[0].delta.content)
                    on_text("".join(parts))
        return _with_usage("".join(parts), usage, messages, model)


def _with_usage(text: str, usage: Any, messages: list[Message], model: str) -> Reply:
    # Servers that report no usage (or ignore stream_options) get an estimate rather than zero.
    if usage is None:
        return Reply(text=text, prompt_tokens=estimate_tokens(prompt_text(messages)),
                     completion_tokens=estimate_tokens(text), model=model)
    return Reply(text=text, prompt_tokens=usage.prompt_tokens or 0,
                 completion_tokens=usage.completion_tokens or 0, model=model)


def _status_message(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return error.response.text[:300] or error.message


def _cause(error: Exception) -> str:
    cause = error.__cause__ or error.__context__
    return f"{type(cause).__name__}: {cause}" if cause else str(error)

