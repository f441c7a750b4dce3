"""Anthropic's Messages API through the official `anthropic` SDK (its own retries switched off)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import anthropic

from autocoder.llm.base import (
    BaseProvider,
    Reply,
    TextCallback,
    error_for_status,
    partial_reply,
    past,
    read_stream,
    retry_after_seconds,
    sdk_timeout,
    server_error,
)
from autocoder.llm.types import (
    CAPPED,
    DEADLINE,
    FINISHED,
    TOOL,
    LLMBadRequest,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
    ReplyFormat,
    safe_url,
)

# The Messages API requires max_tokens; this is the cap when neither the caller nor the role's
# configuration (LLM_MAX_TOKENS*) sets one.
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
    # A reply held to a schema is the input of one tool the model must call.
    reply_forms = (TOOL,)

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
                 on_text: TextCallback | None, deadline: float | None,
                 reply_format: ReplyFormat | None = None) -> Reply:
        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {"model": self.config.model, "messages": turns,
                                   "max_tokens": max_tokens or DEFAULT_MAX_TOKENS,
                                   "timeout": sdk_timeout(anthropic.Timeout, timeout_s, deadline)}
        if system:
            request["system"] = system
        if reply_format is not None:
            shape = reply_format.schema
            request["tools"] = [{"name": shape.name, "input_schema": shape.schema,
                                 "description": shape.hint or f"The {role}'s reply."}]
            request["tool_choice"] = {"type": "tool", "name": shape.name}
        # No temperature: the Messages API of this SDK generation has no sampling parameters.
        try:
            if on_text is None:
                return self._reply(self._client.messages.create(**request))
            return self._stream(request, messages, on_text, idle_s=timeout_s, deadline=deadline)
        except anthropic.APITimeoutError:
            if past(deadline):  # the deadline came before any reply: nothing to keep
                return Reply(text="", prompt_tokens=0, completion_tokens=0,
                             model=self.config.model, finish_reason=DEADLINE)
            failure: LLMError = LLMTimeout(
                f"no reply from {safe_url(self.base_url)} within {timeout_s:g}s "
                "(LLM_IDLE_TIMEOUT_S)")
        except anthropic.APIError as error:
            failure = self._translate(error)
        # Raised outside the except block so the SDK error is not kept as __context__.
        raise failure

    def _translate(self, error: anthropic.APIError) -> LLMError:
        where = safe_url(self.base_url)
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
        tool_input = [block.input for block in response.content if block.type == "tool_use"]
        if tool_input:  # a reply held to a schema: the tool's input is the reply
            text = json.dumps(tool_input[0])
        return Reply(text=text, prompt_tokens=_prompt_tokens(response.usage),
                     completion_tokens=response.usage.output_tokens or 0,
                     model=response.model or self.config.model,
                     finish_reason=_finish(response.stop_reason))

    def _stream(self, request: dict[str, Any], messages: list[Message], on_text: TextCallback,
                *, idle_s: float, deadline: float | None) -> Reply:
        state = _StreamState(model=self.config.model, on_text=on_text)
        where = safe_url(self.base_url)
        with self._client.messages.create(**request, stream=True) as stream:
            read_stream(stream.response, state.take, idle_s=idle_s, deadline=deadline,
                        where=where, silence=lambda: (
                            f"{where} sent no text for {idle_s:g}s after {state.deltas} "
                            "deltas (LLM_IDLE_TIMEOUT_S)"))
        text = "".join(state.parts)
        if state.finish_reason is None and past(deadline):
            reply = partial_reply(text, state.deltas, messages, state.model,
                                  max_tokens=request["max_tokens"])
            # message_start already counted the prompt, and deltas counted output so far.
            return Reply(text=text, prompt_tokens=state.prompt_tokens or reply.prompt_tokens,
                         completion_tokens=max(state.completion_tokens,
                                               reply.completion_tokens),
                         model=state.model, finish_reason=DEADLINE)
        return Reply(text=text, prompt_tokens=state.prompt_tokens,
                     completion_tokens=state.completion_tokens, model=state.model,
                     finish_reason=state.finish_reason or FINISHED)


@dataclass
class _StreamState:
    """What the events of one streamed message said so far."""

    model: str
    on_text: TextCallback
    parts: list[str] = field(default_factory=list)
    deltas: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None

    def take(self, event: dict[str, Any]) -> bool:
        """Fold one event in; True when it carried text."""
        kind = event.get("type")
        if kind == "error":
            raise _stream_error(event.get("error") or {})
        if kind == "message_start":
            message = event.get("message") or {}
            self.model = message.get("model") or self.model
            started = SimpleNamespace(**(message.get("usage") or {}))
            self.prompt_tokens = _prompt_tokens(started)
            self.completion_tokens = getattr(started, "output_tokens", 0) or 0
        elif kind == "message_delta":
            # message_delta carries the cumulative output count, not an increment.
            usage = event.get("usage") or {}
            self.completion_tokens = usage.get("output_tokens") or self.completion_tokens
            stop = (event.get("delta") or {}).get("stop_reason")
            self.finish_reason = _finish(stop) if stop else self.finish_reason
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            # A reply held to a schema streams as the forced tool call's JSON input.
            piece = (delta.get("text") if delta.get("type") == "text_delta"
                     else delta.get("partial_json") if delta.get("type") == "input_json_delta"
                     else None)
            if piece:
                self.parts.append(piece)
                self.deltas += 1
                self.on_text("".join(self.parts))
                return True
        return False


def _stream_error(error: dict[str, Any]) -> LLMError:
    """An error event inside a stream: overloaded and API errors can pass, others will not."""
    text = f"{error.get('type', 'error')}: {error.get('message', '')}"
    if error.get("type") in ("overloaded_error", "api_error"):
        return LLMServerError(f"error event in the stream: {text}")
    if error.get("type") == "rate_limit_error":
        return LLMRateLimited(f"error event in the stream: {text}")
    return LLMBadRequest(f"error event in the stream: {text}")


def _finish(stop_reason: str | None) -> str:
    return CAPPED if stop_reason == "max_tokens" else FINISHED


def _prompt_tokens(usage: Any) -> int:
    # With prompt caching, input_tokens counts only the uncached part; all of it was sent.
    return ((getattr(usage, "input_tokens", 0) or 0)
            + (getattr(usage, "cache_creation_input_tokens", 0) or 0)
            + (getattr(usage, "cache_read_input_tokens", 0) or 0))


def _status_message(error: anthropic.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return f"{inner.get('type', 'error')}: {inner['message']}"
    return error.response.text[:300] or error.message
