"""What every provider shares: request checks, timing, retries, the call record, redaction.

A provider subclass only implements `_attempt` (one request, SDK errors already translated to
LLMError); `complete` wraps it so that every provider retries, measures and reports the same way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from autocoder.llm.retry import with_retries
from autocoder.llm.types import (
    MESSAGE_ROLES,
    ROLES,
    CallRecord,
    Completion,
    LLMAuthError,
    LLMBadRequest,
    LLMError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    Message,
    ProviderConfig,
)

logger = logging.getLogger("autocoder.llm")

TextCallback = Callable[[str], None]
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class Reply:
    """What one successful attempt produced."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    model: str


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


class BaseProvider:
    name: str = ""

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
    ) -> Completion:
        """Send `messages`; retry transient failures; report the call once to `record`.

        `on_text`, when given, streams: it is called with the whole text so far as it grows
        (from the start again if an attempt fails and is retried).
        """
        started = time.monotonic()
        attempts = 0

        def attempt() -> Reply:
            nonlocal attempts
            attempts += 1
            try:
                return self._attempt(messages, role=role, max_tokens=max_tokens,
                                     temperature=temperature,
                                     timeout_s=timeout_s or self.config.timeout_s,
                                     on_text=on_text)
            except LLMError as error:
                self._scrub(error)  # before the retry policy logs it
                raise

        try:
            check_request(messages, role)
            reply = with_retries(attempt, max_retries=self.config.max_retries,
                                 base_delay_s=self.retry_base_delay_s)
        except Exception as error:
            self._scrub(error)
            self._report_failure(role, error, attempts, started, record)
            raise
        latency_ms = _elapsed_ms(started)
        self._report(record, CallRecord(
            role=role, provider=self.name, model=reply.model, prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens, latency_ms=latency_ms, error=None,
            attempts=attempts))
        return Completion(text=reply.text, prompt_tokens=reply.prompt_tokens,
                          completion_tokens=reply.completion_tokens, latency_ms=latency_ms,
                          model=reply.model, provider=self.name)

    def _attempt(self, messages: list[Message], *, role: str, max_tokens: int | None,
                 temperature: float | None, timeout_s: float,
                 on_text: TextCallback | None) -> Reply:
        raise NotImplementedError

    def _scrub(self, error: BaseException) -> None:
        # SDK messages can echo request details; the key must not reach logs or the database.
        if self.config.api_key:
            error.args = tuple(redact(str(arg), self.config.api_key) for arg in error.args)

    def _report_failure(self, role: str, error: BaseException, attempts: int, started: float,
                        record: Callable[[CallRecord], None] | None) -> None:
        description = f"{type(error).__name__}: {error}"[:MAX_ERROR_CHARS]
        self._report(record, CallRecord(
            role=role, provider=self.name, model=self.model_name, prompt_tokens=0,
            completion_tokens=0, latency_ms=_elapsed_ms(started), error=description,
            attempts=attempts))

    def _report(self, record: Callable[[CallRecord], None] | None, call: CallRecord) -> None:
        level = logging.INFO if call.error is None else logging.WARNING
        logger.log(level, "llm call role=%s provider=%s model=%s prompt_tokens=%d "
                   "completion_tokens=%d latency_ms=%d attempts=%d error=%s", call.role,
                   call.provider, call.model, call.prompt_tokens, call.completion_tokens,
                   call.latency_ms, call.attempts, call.error)
        if record is not None:
            record(call)


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def server_error(message: str) -> LLMServerError:
    """A reply the protocol does not allow (truncated JSON, no choices): worth one more try."""
    return LLMServerError(f"malformed reply from the server: {message}"[:MAX_ERROR_CHARS])
