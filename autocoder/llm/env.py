"""What the environment sets for the models; Django-free so settings.py can import it.

The settings that win over the Model page (`ENV_SETTINGS`), the provider names they accept
(`normalize_provider`), and the per-role overrides:

`LLM_<FIELD>_<ROLE>` overrides one field of the global `LLM_<FIELD>` for one role, e.g.
`LLM_MODEL_IMPLEMENTER=qwen2.5-coder:32b` or `LLM_PROVIDER_REFLECTOR=anthropic`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from autocoder.llm.types import ROLES

# Longest names first, so LLM_BASE_URL_X is not read as field BASE with role URL_X.
FIELDS: dict[str, str] = {
    "IDLE_TIMEOUT_S": "timeout_s",
    "MAX_TOKENS": "max_tokens",
    "BASE_URL": "base_url",
    "API_KEY": "api_key",
    "TIMEOUT_S": "timeout_s",  # the older name of IDLE_TIMEOUT_S
    "MAX_RETRIES": "max_retries",
    "PROVIDER": "provider",
    "MODEL": "model",
}


# Spellings people use for the same OpenAI-compatible wire protocol.
PROVIDER_ALIASES: dict[str, str] = {
    "openai-compatible": "openai", "openai_compatible": "openai", "ollama": "openai",
    "vllm": "openai", "lmstudio": "openai", "llama.cpp-server": "openai",
    "llama-cpp": "llamacpp", "llama_cpp": "llamacpp",
}


def normalize_provider(name: str) -> str:
    name = name.strip().lower()
    return PROVIDER_ALIASES.get(name, name)


# The fields the Model page sets, and the setting that wins over the page when it is set.
ENV_SETTINGS: dict[str, str] = {
    "provider": "LLM_PROVIDER", "base_url": "LLM_BASE_URL", "api_key": "LLM_API_KEY",
    "model": "LLM_MODEL",
}


class LLMSettingsError(ValueError):
    """A per-role variable is misspelt or malformed; raised while settings load, at start-up."""


def role_env_overrides(environ: Mapping[str, str] = os.environ) -> dict[str, dict[str, object]]:
    """{role: {field: value}} from every non-empty `LLM_<FIELD>_<ROLE>` variable."""
    overrides: dict[str, dict[str, object]] = {}
    for name, value in environ.items():
        parsed = _parse_name(name)
        if parsed is None or not value.strip():
            continue
        field, role = parsed
        overrides.setdefault(role, {})[field] = _parse_value(name, field, value.strip())
    return overrides


def _parse_name(name: str) -> tuple[str, str] | None:
    for prefix, field in FIELDS.items():
        head = f"LLM_{prefix}_"
        if not name.startswith(head):
            continue
        suffix = name[len(head):].lower()
        if suffix in ROLES:
            return field, suffix
        # A misspelt role would otherwise be ignored silently and the wrong model used.
        if suffix:
            raise LLMSettingsError(
                f"{name}: unknown role {suffix!r}; roles are {', '.join(ROLES)}")
    return None


def _parse_value(name: str, field: str, value: str) -> object:
    try:
        if field == "timeout_s":
            return float(value)
        if field in ("max_retries", "max_tokens"):
            return int(value)
    except ValueError:
        raise LLMSettingsError(f"{name}={value!r} is not a number") from None
    if field == "provider":
        return value.lower()
    return value
