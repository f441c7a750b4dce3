"""LLM providers behind one interface (see docs/llm.md).

Importing this package touches no SDK and no model: providers load what they need when built.
"""

from __future__ import annotations

from autocoder.llm.base import BaseProvider, estimate_tokens
from autocoder.llm.config import build_provider, provider_for_role, role_config
from autocoder.llm.retry import backoff_delay, with_retries
from autocoder.llm.scripted import ScriptedProvider, validate_script
from autocoder.llm.types import (
    MESSAGE_ROLES,
    PROVIDERS,
    ROLES,
    CallRecord,
    Completion,
    LLMAuthError,
    LLMBadRequest,
    LLMConfigError,
    LLMConnectionError,
    LLMError,
    LLMRateLimited,
    LLMServerError,
    LLMTimeout,
    Message,
    Provider,
    ProviderConfig,
)

__all__ = [
    "MESSAGE_ROLES", "PROVIDERS", "ROLES", "BaseProvider", "CallRecord", "Completion",
    "LLMAuthError", "LLMBadRequest", "LLMConfigError", "LLMConnectionError", "LLMError",
    "LLMRateLimited", "LLMServerError", "LLMTimeout", "Message", "Provider", "ProviderConfig",
    "ScriptedProvider", "backoff_delay", "build_provider", "estimate_tokens",
    "provider_for_role", "role_config", "validate_script", "with_retries",
]
