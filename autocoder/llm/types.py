"""Types shared by every provider and by the engine (messages, completions, errors, config)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

ROLES: tuple[str, ...] = ("analyst", "architect", "implementer", "tester", "reviewer", "reflector")
MESSAGE_ROLES: tuple[str, ...] = ("system", "user", "assistant")
PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "llamacpp", "scripted")


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    model: str
    provider: str


@dataclass(frozen=True)
class CallRecord:
    """One provider call, handed to the caller's `record` callback for cost accounting."""

    role: str
    provider: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    error: str | None
    attempts: int


class LLMError(Exception):
    """A provider call failed; `retryable` says whether trying again can help.

    `retry_after_s` carries a server's Retry-After hint; `attempts` is set once retries are over.
    """

    retryable: bool = False

    def __init__(self, message: str = "", *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.attempts = 0


class LLMTimeout(LLMError):
    retryable = True


class LLMRateLimited(LLMError):
    retryable = True


class LLMServerError(LLMError):
    retryable = True


class LLMConnectionError(LLMError):
    """The endpoint could not be reached (refused, reset, DNS): often a server still starting."""

    retryable = True


class LLMBadRequest(LLMError):
    retryable = False


class LLMAuthError(LLMError):
    retryable = False


class LLMConfigError(LLMError):
    retryable = False


@dataclass(frozen=True, repr=False)
class ProviderConfig:
    """Where one role's calls go. `api_key` never appears in repr() or str()."""

    provider: str
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    timeout_s: float = 120
    max_retries: int = 2

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise LLMConfigError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.max_retries < 0:
            raise LLMConfigError(f"max_retries must be 0 or more, got {self.max_retries}")

    def __repr__(self) -> str:
        key = "<set>" if self.api_key else "<not set>"
        return (
            f"ProviderConfig(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={safe_url(self.base_url)!r}, api_key={key}, "
            f"timeout_s={self.timeout_s!r}, max_retries={self.max_retries!r})"
        )

    __str__ = __repr__


@runtime_checkable
class Provider(Protocol):
    name: str

    def complete(
        self,
        messages: list[Message],
        *,
        role: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        timeout_s: float | None = None,
        record: Callable[[CallRecord], None] | None = None,
    ) -> Completion: ...


def safe_url(url: str) -> str:
    """`url` without user:password, for logs and messages."""
    parts = urlsplit(url)
    if not parts.username and not parts.password:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
