"""Types shared by every provider and by the engine (messages, completions, errors, config)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

ROLES: tuple[str, ...] = ("analyst", "architect", "implementer", "tester", "reviewer", "reflector")
MESSAGE_ROLES: tuple[str, ...] = ("system", "user", "assistant")
PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "llamacpp", "scripted")


@dataclass(frozen=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


# Why a reply ended: the model finished, it reached its token cap, or the caller's deadline
# came first and the reply was cut there (what had arrived is kept).
FINISHED, CAPPED, DEADLINE = "stop", "length", "deadline"


# How a reply's shape is constrained (docs/llm.md, "Constrained replies"): an OpenAI-style
# `response_format` of type json_schema; llama-cpp-python's json_object with a schema; a forced
# tool call (Anthropic); or not at all, the fenced protocol the prompts describe.
JSON_SCHEMA, JSON_OBJECT, TOOL, FENCED = "json_schema", "json_object", "tool", "fenced"


@dataclass(frozen=True)
class ReplySchema:
    """The shape of one role's reply: a JSON schema, and what the model is told when its reply
    is held to it (the prompts otherwise describe the fenced protocol)."""

    name: str
    schema: dict[str, object] = field(hash=False)  # a JSON schema
    hint: str = ""


@dataclass(frozen=True)
class ReplyFormat:
    """A reply held to `schema` through the provider's option `form` (JSON_SCHEMA, ...)."""

    form: str
    schema: ReplySchema


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: int
    model: str
    provider: str
    finish_reason: str = FINISHED
    # The constraint the reply was held to (a form above), FENCED when none was sent.
    reply_form: str = FENCED


@dataclass(frozen=True)
class CallRecord:
    """One attempt of a provider call, handed to the caller's `record` callback for cost
    accounting; `attempts` is the attempt's number (1 for the first try)."""

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
    An error that comes after the server started answering is never retryable (see
    `BaseProvider.complete`): the server works, trying again would only spend the time twice.
    """

    retryable: bool = False

    def __init__(self, message: str = "", *, retry_after_s: float | None = None,
                 retryable: bool | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.attempts = 0
        if retryable is not None:
            self.retryable = retryable


class LLMTimeout(LLMError):
    """No first token, or no next chunk, within the idle timeout. Retryable only while nothing
    had arrived (a server that is restarting or stuck on another request)."""

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
    """Where one role's calls go, and how long they may be. `api_key` never appears in repr().

    `timeout_s` is the idle timeout: the longest silence accepted (before the first token, or
    between two chunks of a streamed reply; a reply that is not streamed must come whole within
    it). It is not a limit on a reply that keeps streaming: callers bound the total with a
    deadline. `max_tokens` caps each reply when the caller asks for no cap of its own.
    """

    provider: str
    model: str = ""
    base_url: str = ""
    api_key: str = ""
    timeout_s: float = 120
    max_retries: int = 2
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise LLMConfigError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.max_retries < 0:
            raise LLMConfigError(f"max_retries must be 0 or more, got {self.max_retries}")
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise LLMConfigError(f"max_tokens must be positive, got {self.max_tokens}")

    def __repr__(self) -> str:
        key = "<set>" if self.api_key else "<not set>"
        return (
            f"ProviderConfig(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={safe_url(self.base_url)!r}, api_key={key}, "
            f"timeout_s={self.timeout_s!r}, max_retries={self.max_retries!r}, "
            f"max_tokens={self.max_tokens!r})"
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
        on_text: Callable[[str], None] | None = None,
        deadline: float | None = None,
        reply_format: ReplyFormat | None = None,
    ) -> Completion: ...


def safe_url(url: str) -> str:
    """`url` without user:password, for logs and messages."""
    parts = urlsplit(url)
    if not parts.username and not parts.password:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def memory_key(provider: Provider) -> tuple[str, str, str]:
    """(provider, base URL without credentials, model): what is remembered about a model (its
    reply form, whether it reads system messages) belongs to."""
    config = getattr(provider, "config", None)
    model = str(getattr(provider, "model_name", "") or getattr(config, "model", ""))
    base_url = safe_url(str(getattr(config, "base_url", "") or ""))
    return (provider.name, base_url[:500], model[:200])
