"""Any OpenAI-compatible chat endpoint: OpenAI, Ollama, vLLM, llama.cpp server, LM Studio.

Uses the official `openai` SDK with its own retries switched off: the retry policy is ours
(autocoder.llm.retry), shared by every provider and visible in the call record. Streamed replies
are read line by line, so that the idle timeout and the caller's deadline are checked as the
text arrives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai

from autocoder.llm.base import (
    CONNECT_TIMEOUT_S,
    BaseProvider,
    Reply,
    TextCallback,
    error_for_status,
    estimate_tokens,
    partial_reply,
    past,
    prompt_text,
    read_stream,
    retry_after_seconds,
    sdk_timeout,
    server_error,
)
from autocoder.llm.types import (
    CAPPED,
    DEADLINE,
    FINISHED,
    JSON_OBJECT,
    JSON_SCHEMA,
    LLMBadRequest,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
    ReplyFormat,
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
    # OpenAI, vLLM, Ollama, LM Studio and llama.cpp's own server take a json_schema
    # response_format; llama-cpp-python's server takes a json_object with the schema inside.
    reply_forms = (JSON_SCHEMA, JSON_OBJECT)

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
        # A server someone runs may use a chat format without a system message (llama-cpp-
        # python's gemma): measured on the first call (autocoder/llm/system_role.py).
        self.may_drop_system_messages = bool(base_url)
        self._client = openai.OpenAI(api_key=config.api_key or PLACEHOLDER_KEY,
                                     base_url=self.base_url, max_retries=0,
                                     timeout=config.timeout_s)

    def _attempt(self, messages: list[Message], *, role: str, max_tokens: int | None,
                 temperature: float | None, timeout_s: float,
                 on_text: TextCallback | None, deadline: float | None,
                 reply_format: ReplyFormat | None = None) -> Reply:
        request: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "timeout": sdk_timeout(openai.Timeout, timeout_s, deadline),
        }
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if temperature is not None:
            request["temperature"] = temperature
        if reply_format is not None:
            request["response_format"] = response_format(reply_format)
        try:
            if on_text is None:
                return self._reply(self._client.chat.completions.create(**request), messages)
            return self._stream(request, messages, on_text, idle_s=timeout_s,
                                deadline=deadline, max_tokens=max_tokens)
        except openai.APITimeoutError as error:
            if past(deadline):  # the deadline came before any reply: nothing to keep
                return Reply(text="", prompt_tokens=0, completion_tokens=0,
                             model=self.config.model, finish_reason=DEADLINE)
            failure = self._timed_out(error, timeout_s, streaming=on_text is not None)
        except openai.APIError as error:
            failure = self._translate(error)
        if reply_format is not None:
            failure = option_refused(failure, "response_format")
        # Raised outside the except block: the SDK error (which may quote the key) is not
        # kept as __context__.
        raise failure

    def _timed_out(self, error: openai.APITimeoutError, timeout_s: float, *,
                   streaming: bool) -> LLMError:
        where = safe_url(self.base_url)
        if isinstance(error.__cause__, httpx2.ConnectTimeout):
            return LLMConnectionError(f"cannot reach {where}: no connection within "
                                      f"{CONNECT_TIMEOUT_S:g}s")
        what = "no first token" if streaming else "no reply"
        return LLMTimeout(f"{what} from {where} within {timeout_s:g}s (LLM_IDLE_TIMEOUT_S)")

    def _translate(self, error: openai.APIError) -> LLMError:
        where = safe_url(self.base_url)
        if isinstance(error, openai.APIConnectionError):
            return LLMConnectionError(f"cannot reach {where}: {_cause(error)}")
        if isinstance(error, openai.APIStatusError):
            return error_for_status(error.status_code, _status_message(error),
                                    retry_after_s=retry_after_seconds(error.response.headers))
        # A body the SDK cannot parse.
        return server_error(str(error))

    def _reply(self, response: Any, messages: list[Message]) -> Reply:
        if not getattr(response, "choices", None):
            raise server_error("no choices in the reply")
        choice = response.choices[0]
        return _with_usage(choice.message.content or "", response.usage, messages,
                           response.model or self.config.model, chunks=0,
                           finish_reason=choice.finish_reason)

    def _stream(self, request: dict[str, Any], messages: list[Message], on_text: TextCallback,
                *, idle_s: float, deadline: float | None, max_tokens: int | None) -> Reply:
        request = {**request, "stream": True, "stream_options": {"include_usage": True}}
        state = _StreamState(model=self.config.model, on_text=on_text)
        with self._client.chat.completions.create(**request) as stream:
            read_stream(stream.response, state.take, idle_s=idle_s, deadline=deadline,
                        silence=lambda: self._silence(state.chunks, idle_s),
                        where=safe_url(self.base_url))
        text = "".join(state.parts)
        if state.finish_reason is None and past(deadline):
            return partial_reply(text, state.chunks, messages, state.model,
                                 max_tokens=max_tokens)
        return _with_usage(text, state.usage, messages, state.model, chunks=state.chunks,
                           finish_reason=state.finish_reason)

    def _silence(self, chunks: int, idle_s: float) -> str:
        where = safe_url(self.base_url)
        if not chunks:
            return f"no first token from {where} within {idle_s:g}s (LLM_IDLE_TIMEOUT_S)"
        return f"{where} went silent for {idle_s:g}s after {chunks} tokens (LLM_IDLE_TIMEOUT_S)"


def option_refused(failure: LLMError, option: str) -> LLMError:
    """A failure that names the structured-output option is the server refusing it, whatever
    its status: llama-cpp-python's server answers a response_format it does not know with
    HTTP 500 and the validation error. Refused, not failing: never worth a retry."""
    if isinstance(failure, (LLMBadRequest, LLMServerError)) and option in str(failure):
        return LLMBadRequest(str(failure))
    return failure


def response_format(reply_format: ReplyFormat) -> dict[str, Any]:
    """The request's `response_format` for a reply held to a schema."""
    shape = reply_format.schema
    if reply_format.form == JSON_OBJECT:
        return {"type": "json_object", "schema": shape.schema}
    return {"type": "json_schema",
            "json_schema": {"name": shape.name, "strict": True, "schema": shape.schema}}


@dataclass
class _StreamState:
    """What the chunks of one streamed reply said so far."""

    model: str
    on_text: TextCallback
    parts: list[str] = field(default_factory=list)
    chunks: int = 0
    usage: Any = None
    finish_reason: str | None = None

    def take(self, chunk: dict[str, Any]) -> bool:
        """Fold one chunk in; True when it carried text."""
        if chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise server_error(f"error event in the stream: {message}")
        self.model = chunk.get("model") or self.model
        if chunk.get("usage"):
            self.usage = SimpleNamespace(**chunk["usage"])
        choices = chunk.get("choices") or []
        if not choices:
            return False
        self.finish_reason = choices[0].get("finish_reason") or self.finish_reason
        content = (choices[0].get("delta") or {}).get("content")
        if not content:
            return False
        self.parts.append(content)
        self.chunks += 1
        self.on_text("".join(self.parts))
        return True


def _with_usage(text: str, usage: Any, messages: list[Message], model: str, *, chunks: int,
                finish_reason: str | None) -> Reply:
    finish = CAPPED if finish_reason == "length" else FINISHED
    # Servers that report no usage (or ignore stream_options) get an estimate rather than zero.
    if usage is None:
        return Reply(text=text, prompt_tokens=estimate_tokens(prompt_text(messages)),
                     completion_tokens=max(chunks, estimate_tokens(text)), model=model,
                     finish_reason=finish)
    return Reply(text=text, prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                 completion_tokens=getattr(usage, "completion_tokens", 0) or 0, model=model,
                 finish_reason=finish)


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

