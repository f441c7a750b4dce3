"""Types shared by every provider and by the engine (messages, completions, errors)."""

from __future__ import annotations

from dataclasses import dataclass

ROLES: tuple[str, ...] = ("analyst", "architect", "implementer", "tester", "reviewer", "reflector")


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
    """A provider call failed; `retryable` says whether trying again can help."""

    retryable: bool = False


class LLMTimeout(LLMError):
    retryable = True


class LLMRateLimited(LLMError):
    retryable = True


class LLMServerError(LLMError):
    retryable = True


class LLMBadRequest(LLMError):
    retryable = False


class LLMAuthError(LLMError):
    retryable = False


class LLMConfigError(LLMError):
    retryable = False
