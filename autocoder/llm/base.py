"""What every provider shares: request checks, timing, retries, the call record, redaction.

A provider subclass only implements `_attempt` (one request, SDK errors already translated to
LLMError, streaming through `on_text`, stopping at the deadline); `complete` wraps it so that
every provider caps, retries, measures and reports the same way.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from autocoder import metrics
from autocoder.llm.retry import with_retries
from autocoder.llm.types import (
    DEADLINE,
    FENCED,
    FINISHED,
    MESSAGE_ROLES,
    ROLES,
    CallRecord,
    Completion,
    LLMAuthError,
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
    ReplyFormat,
)

logger = logging.getLogger("autocoder.llm")

TextCallback = Callable[[str], None]
MAX_ERROR_CHARS = 500
# A server that does not accept the connection this fast is down, whatever the idle timeout.
CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class Reply:
    """What one successful attempt produced."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str
    finish_reason: str = FINISHED


def estimate_tokens(text: str) -> int:
    """A token estimate for replies whose server reports no usage: whitespace-separated words.

    Real tokenizers count roughly 1.3 tokens per English word, so this undercounts; it exists so
    budgets and accounting still move, not to bill anyone.
    """
    return len(text.split())


def prompt_text(messages: list[Message]) -> str:
    return "\n".join(message.content for message in messages)


def redact(text: str, secret: str) -> str:
    if not secret:
        return text
    return text.replace(secret, "[redacted]")


def error_for_status(status: int, message: str, *, retry_after_s: float | None = None) -> LLMError:
    """The typed error for an HTTP status: 408/409/429/5xx can pass, other 4xx will not."""
    text = f"HTTP {status}: {message}"[:MAX_ERROR_CHARS]
    if status in (401, 403):
        return LLMAuthError(text + " (check the API key for this provider)")
    if status == 408:
        return LLMTimeout(text, retry_after_s=retry_after_s)
    if status == 429:
        return LLMRateLimited(text, retry_after_s=retry_after_s)
    if status == 409 or status >= 500:
        return LLMServerError(text, retry_after_s=retry_after_s)
    return LLMBadRequest(text)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date), if present."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def check_request(messages: list[Message], role: str) -> None:
    if role not in ROLES:
        raise LLMBadRequest(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    if not messages:
        raise LLMBadRequest("no messages to send")
    for message in messages:
        if not isinstance(message, Message) or message.role not in MESSAGE_ROLES:
            raise LLMBadRequest(
                f"bad message {message!r}: expected Message with role in {MESSAGE_ROLES}")


class Heard:
    """The caller's `on_text`, wrapped so that an attempt knows what arrived: the text so far
    and the number of chunks (one token each on llama.cpp, Ollama, vLLM and OpenAI)."""

    def __init__(self, on_text: TextCallback | None) -> None:
        self.on_text = on_text
        self.chunks = 0
        self.text = ""

    def __call__(self, text: str) -> None:
        self.chunks += 1
        self.text = text
        if self.on_text is not None:
            self.on_text(text)


def partial_reply(text: str, chunks: int, messages: list[Message], model: str, *,
                  max_tokens: int | None, finish_reason: str = DEADLINE) -> Reply:
    """What a stream had delivered when reading stopped early. The server reports usage only
    at the end, so the tokens are estimated: the chunks seen, at least one per word, never more
    than the cap the server was given."""
    tokens = max(chunks, estimate_tokens(text))
    if max_tokens:
        tokens = min(tokens, max_tokens)
    prompt_tokens = estimate_tokens(prompt_text(messages)) if chunks else 0
    return Reply(text=text, prompt_tokens=prompt_tokens, completion_tokens=tokens,
                 model=model, finish_reason=finish_reason)


def read_timeout(idle_s: float, deadline: float | None) -> float:
    """How long one read may wait: the idle timeout, or less when the deadline is nearer."""
    if deadline is None:
        return idle_s
    return max(0.001, min(idle_s, deadline - time.monotonic()))


def sdk_timeout(timeout_type: Any, idle_s: float, deadline: float | None) -> Any:
    """An SDK's timeout for one request: every read may wait the idle time (less when the
    deadline is nearer); a connection must open quickly whatever the idle time."""
    read = read_timeout(idle_s, deadline)
    return timeout_type(read, connect=min(read, CONNECT_TIMEOUT_S))


def past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def read_stream(response: Any, take: Callable[[dict[str, Any]], bool], *, idle_s: float,
                deadline: float | None, silence: Callable[[], str], where: str) -> None:
    """Feed each `data:` event of a server-sent-event response to `take` (which returns True
    when the event carried text) until `[DONE]`, the end of the body, or the deadline.

    Raw lines rather than the SDKs' events: servers send keep-alive pings while a generation is
    stuck (llama-cpp-python a comment every 15 s, Anthropic a ping event), which a per-read
    timeout cannot tell from tokens; here every line is a chance to check both clocks. A read
    that times out before the deadline, or a broken connection, is an error; past the deadline
    the caller keeps what came.
    """
    # The HTTP library under both SDKs (already loaded by them; not at package import): errors
    # raised while a body is read are not wrapped by the SDKs.
    import httpx2

    failure: LLMError | None = None
    try:
        _read_events(response.iter_lines(), take, idle_s=idle_s, deadline=deadline,
                     silence=silence)
    except httpx2.TimeoutException:
        if not past(deadline):
            failure = LLMTimeout(silence())
    except httpx2.RequestError as error:
        failure = LLMConnectionError(f"the connection to {where} broke mid-reply: "
                                     f"{type(error).__name__}")
    if failure is not None:
        raise failure  # outside the except block: the HTTP error is not kept as __context__


def _read_events(lines: Iterable[str], take: Callable[[dict[str, Any]], bool], *,
                 idle_s: float, deadline: float | None, silence: Callable[[], str]) -> None:
    last_text = time.monotonic()
    for line in lines:
        if past(deadline):
            return
        data = line[len("data:"):].strip() if line.startswith("data:") else ""
        if data == "[DONE]":
            return
        if data and take(_event(data)):
            last_text = time.monotonic()
        elif time.monotonic() - last_text > idle_s:
            raise LLMTimeout(silence())


def _event(data: str) -> dict[str, Any]:
    try:
        event = json.loads(data)
    except json.JSONDecodeError:
        raise server_error(f"a stream event is not JSON: {data[:200]}") from None
    if not isinstance(event, dict):
        raise server_error(f"a stream event is not an object: {data[:200]}")
    return event


class BaseProvider:
    name: str = ""
    # The constraints this provider can send, in the order to try them (docs/llm.md,
    # "Constrained replies"); autocoder.llm.structured picks one and remembers it per model.
    reply_forms: tuple[str, ...] = ()

    def __init__(self, config: ProviderConfig, *, retry_base_delay_s: float = 0.5) -> None:
        self.config = config
        self.retry_base_delay_s = retry_base_delay_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"

    @property
    def model_name(self) -> str:
        return self.config.model

    def complete(
        self,
        messages: list[Message],
        *,
        role: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
        record: Callable[[CallRecord], None] | None = None,
        on_text: TextCallback | None = None,
        deadline: float | None = None,
        reply_format: ReplyFormat | None = None,
    ) -> Completion:
        """Send `messages`; retry what failed before the server answered; report every attempt
        to `record` (attempts cost money even when they fail).

        `max_tokens` defaults to the role's cap (`config.max_tokens`); `timeout_s` replaces the
        configured idle timeout (the longest silence) for this call. `on_text`, when given,
        streams: it is called with the whole text so far as it grows (from the start again if
        an attempt fails and is retried). `deadline`, a `time.monotonic()` value, bounds the
        whole call: past it reading stops and the text so far is the reply (finish_reason
        "deadline"), and no retry starts. `reply_format` holds the reply to a schema through
        one of `reply_forms` (a server that refuses it answers LLMBadRequest).
        """
        started = time.monotonic()
        try:
            check_request(messages, role)
        except LLMError as error:
            self._report_failure(role, error, 0, started, Heard(None), messages, None, record)
            raise
        attempts = 0
        cap = max_tokens or self.config.max_tokens

        def attempt() -> Reply:
            nonlocal attempts
            attempts += 1
            return self._recorded_attempt(
                messages, role=role, number=attempts, max_tokens=cap, temperature=temperature,
                timeout_s=timeout_s or self.config.timeout_s, on_text=on_text,
                deadline=deadline, record=record, reply_format=reply_format)

        reply = with_retries(attempt, max_retries=self.config.max_retries,
                             base_delay_s=self.retry_base_delay_s, deadline=deadline)
        return Completion(text=reply.text, prompt_tokens=reply.prompt_tokens,
                          completion_tokens=reply.completion_tokens,
                          latency_ms=_elapsed_ms(started), model=reply.model,
                          provider=self.name, finish_reason=reply.finish_reason,
                          reply_form=reply_format.form if reply_format else FENCED)

    def _recorded_attempt(self, messages: list[Message], *, role: str, number: int,
                          max_tokens: int | None, temperature: float | None, timeout_s: float,
                          on_text: TextCallback | None, deadline: float | None,
                          record: Callable[[CallRecord], None] | None,
                          reply_format: ReplyFormat | None = None) -> Reply:
        """One attempt, reported to `record` whatever its outcome."""
        started = time.monotonic()
        heard = Heard(on_text)
        try:
            reply = self._attempt(messages, role=role, max_tokens=max_tokens,
                                  temperature=temperature, timeout_s=timeout_s,
                                  on_text=heard if on_text is not None else None,
                                  deadline=deadline, reply_format=reply_format)
        except Exception as error:
            self._scrub(error)  # before the retry policy logs it
            if isinstance(error, LLMError) and heard.chunks:
                # The server was answering: it works, and trying again would only spend the
                # same time (and tokens) twice. Neither this call nor the step retries it.
                error.retryable = False
            self._report_failure(role, error, number, started, heard, messages, max_tokens,
                                 record)
            raise
        if reply.finish_reason == DEADLINE:
            logger.info("llm reply role=%s cut at the deadline after %d tokens", role,
                        reply.completion_tokens)
        self._report(record, CallRecord(
            role=role, provider=self.name, model=reply.model, prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens, latency_ms=_elapsed_ms(started),
            error=None, attempts=number))
        return reply

    def _attempt(self, messages: list[Message], *, role: str, max_tokens: int | None,
                 temperature: float | None, timeout_s: float,
                 on_text: TextCallback | None, deadline: float | None,
                 reply_format: ReplyFormat | None = None) -> Reply:
        """One request. `timeout_s` is the idle timeout; past `deadline`, return what came;
        `reply_format`, when given, is one of `reply_forms`."""
        raise NotImplementedError

    def _scrub(self, error: BaseException) -> None:
        # SDK messages can echo request details; the key must not reach logs or the database.
        if self.config.api_key:
            error.args = tuple(redact(str(arg), self.config.api_key) for arg in error.args)

    def _report_failure(self, role: str, error: BaseException, number: int, started: float,
                        heard: Heard, messages: list[Message], max_tokens: int | None,
                        record: Callable[[CallRecord], None] | None) -> None:
        # Tokens that streamed before the failure were generated, and are paid for.
        spent = partial_reply(heard.text, heard.chunks, messages, self.model_name,
                              max_tokens=max_tokens)
        description = f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
        self._report(record, CallRecord(
            role=role, provider=self.name, model=self.model_name,
            prompt_tokens=spent.prompt_tokens, completion_tokens=spent.completion_tokens,
            latency_ms=_elapsed_ms(started), error=description, attempts=number))

    def _report(self, record: Callable[[CallRecord], None] | None, call: CallRecord) -> None:
        level = logging.INFO if call.error is None else logging.WARNING
        logger.log(level, "llm call role=%s provider=%s model=%s prompt_tokens=%d "
                   "completion_tokens=%d latency_ms=%d attempt=%d error=%s", call.role,
                   call.provider, call.model, call.prompt_tokens, call.completion_tokens,
                   call.latency_ms, call.attempts, call.error)
        metrics.observe_llm_call(call.provider, call.role, call.latency_ms / 1000,
                                 failed=call.error is not None)
        if record is not None:
            record(call)


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def server_error(message: str) -> LLMServerError:
    """A reply the protocol does not allow (truncated JSON, no choices): worth one more try."""
    return LLMServerError(f"malformed reply from the server: {message}"[:MAX_ERROR_CHARS])
