"""Anthropic's Messages API through the official `anthropic` SDK (its own retries switched off)."""

from __future__ import annotations

import time
from typing import Any

import anthropic

from autocoder.llm.base import (
    BaseProvider,
    Reply,
    TextCallback,
    error_for_status,
    retry_after_seconds,
    server_error,
)
from autocoder.llm.types import (
    LLMBadRequest,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMTimeout,
    Message,
    ProviderConfig,
    safe_url,
)

# The Messages API requires max_tokens; this is the cap when the caller sets none.
DEFAULT_MAX_TOKENS = 4096
DEFAULT_BASE_URL = "https://api.anthropic.com"


def to_anthropic(messages: list[Message]) -> tuple[str, list[dict[str, str]]]:
    """System prompt apart, and turns that alternate user/assistant as the API demands."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns: list[dict[str, str]] = []
    for message in messages:
        if message.role == "system":
            continue
        if turns and turns[-1]["role"] == message.role:
            turns[-1]["content"] += "\n\n" + message.content
        else:
            turns.append({"role": message.role, "content": message.content})
    if not turns or turns[0]["role"] != "user":
        raise LLMBadRequest("the Anthropic API needs a user message before any assistant one")
    return system, turns


class AnthropicProvider(BaseProvider):
    name = "anthropic"

    def __init__(self, config: ProviderConfig, *, retry_base_delay_s: float = 0.5) -> None:
        super().__init__(config, retry_base_delay_s=retry_base_delay_s)
        if not config.model:
            raise LLMConfigError(
                "the anthropic provider needs a model name: set LLM_MODEL (or LLM_MODEL_<ROLE>)")
        if not config.api_key:
            raise LLMConfigError(
                "the anthropic provider needs an API key: set LLM_API_KEY (or LLM_API_KEY_<ROLE>)")
        self.base_url = config.base_url.strip() or DEFAULT_BASE_URL
        self._client = anthropic.Anthropic(api_key=config.api_key, base_url=self.base_url,
                                           max_retries=0, timeout=config.timeout_s)

    def _attempt(self, messages: list[Message], *, role: str, max_tokens: int | None,
                 temperature: float | None, timeout_s: float,
                 on_text: TextCallback | None) -> Reply:
        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {"model": self.config.model, "messages": turns,
                                   "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
                                   "timeout": timeout_s}
        if system:
            request["system"] = system
        # No temperature: the Messages API of this SDK generation has no sampling parameters.
        try:
            if on_text is None:
                return self._reply(self._client.messages.create(**request))
            return self._stream(request, on_text, deadline=time.monotonic() + timeout_s)
        except anthropic.APIError as error:
            failure = self._translate(error, timeout_s)
        # Raised outside the except block so the SDK error is not kept as __context__.
        raise failure

    def _translate(self, error: anthropic.APIError, timeout_s: float) -> LLMError:
        where = safe_url(self.base_url)
        if isinstance(error, anthropic.APITimeoutError):
            return LLMTimeout(f"no reply from {where} within {timeout_s:g}s")
        if isinstance(error, anthropic.APIConnectionError):
            cause = error.__cause__ or error.__context__
            return LLMConnectionError(f"cannot reach {where}: "
                                      f"{type(cause).__name__ if cause else error}")
        if isinstance(error, anthropic.APIStatusError):
            return error_for_status(error.status_code, _status_message(error),
                                    retry_after_s=retry_after_seconds(error.response.headers))
        return server_error(str(error))

    def _reply(self, response: Any) -> Reply:
        if getattr(response, "usage", None) is None:
            raise server_error("no usage in the reply")
        text = "".join(block.text for block in response.content if block.type == "text")
        return Reply(text=text, prompt_tokens=_prompt_tokens(response.usage),
                     completion_tokens=response.usage.output_tokens or 0,
                     model=response.model or self.config.model)

    def _stream(self, request: dict[str, Any], on_text: TextCallback, *,
                deadline: float) -> Reply:
        parts: list[str] = []
        prompt_tokens = completion_tokens = 0
        model = self.config.model
        with self._client.messages.create(**request, stream=True) as stream:
            for event in stream:
                if time.monotonic() > deadline:
                    raise LLMTimeout(f"reply from {safe_url(self.base_url)} took longer than "
                                     f"{request['timeout']:g}s")
                if event.type == "message_start":
                    model = event.message.model or model
                    prompt_tokens = _prompt_tokens(event.message.usage)
                    completion_tokens = event.message.usage.output_tokens or 0
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    parts.append(event.delta.text)
                    on_text("".join(parts))
                elif event.type == "message_delta" and event.usage is not None:
                    # message_delta carries the cumulative output count, not an increment.
                    completion_tokens = event.usage.output_tokens or completion_tokens
        return Reply(text="".join(parts), prompt_tokens=prompt_tokens,
                     completion_tokens=completion_tokens, model=model)


def _prompt_tokens(usage: Any) -> int:
    # With prompt caching, input_tokens counts only the uncached part; all of it was sent.
    return ((usage.input_tokens or 0) + (getattr(usage, "cache_creation_input_tokens", 0) or 0)
            + (getattr(usage, "cache_read_input_tokens", 0) or 0))


def _status_message(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return f"{inner.get('type', 'error')}: {inner['message']}"
    return error.response.text[:300] or error.message
