"""Which model each role uses: environment or Model page <- per-role environment <- team override.

Also the factory that turns a ProviderConfig into a provider. SDK-backed providers are imported
only when built, so the project runs without llama-cpp-python and starts fast.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from django.conf import settings

from autocoder.llm.env import ENV_SETTINGS, normalize_provider
from autocoder.llm.scripted import ScriptedProvider
from autocoder.llm.types import (
    PROVIDERS,
    ROLES,
    LLMConfigError,
    Provider,
    ProviderConfig,
)

if TYPE_CHECKING:
    from autocoder.llm.models import SiteModelConfig

# The providers that send an API key to a server, and that server when no base URL is given.
REMOTE_PROVIDER_URLS: dict[str, str] = {
    "openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com",
}
_DEFAULT_PORTS = {"http": 80, "https": 443}


def key_destination(provider: str, base_url: str) -> str:
    """The server an API key saved with `provider` and `base_url` is sent to, as
    scheme://host:port (another path on it is the same receiver), or "" when none can be told.
    A key goes only to the server it was saved for (see `layer`, and the Model page)."""
    url = base_url.strip() or REMOTE_PROVIDER_URLS.get(normalize_provider(provider), "")
    parts = urlsplit(url)
    try:
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:  # not a port number
        return ""
    if not parts.scheme or not parts.hostname:
        return ""
    return f"{parts.scheme.lower()}://{parts.hostname}:{port}"


def default_config(role: str | None = None, *,
                   site: SiteModelConfig | None = None) -> ProviderConfig:
    """The base every role starts from: each field from the environment when it is set there,
    otherwise from the Model page (`site_layer`). The one place the base config is built;
    `site` replaces the stored page (the page tests values before saving them)."""
    site_values = site_layer(role, site=site)

    def pick(field: str) -> str:
        return str(getattr(settings, ENV_SETTINGS[field]) or site_values.get(field, ""))

    return ProviderConfig(
        provider=normalize_provider(pick("provider")),
        model=pick("model"),
        base_url=pick("base_url"),
        api_key=pick("api_key"),
        timeout_s=settings.LLM_TIMEOUT_S,
        max_retries=settings.LLM_MAX_RETRIES,
    )


def site_layer(role: str | None = None, *,
               site: SiteModelConfig | None = None) -> dict[str, str]:
    """What the Model page (SiteModelConfig) says for `role`, where it may apply.

    The address, key and model names saved on the page belong to the provider saved with
    them: while the environment names another provider they are not used, so a key is never
    sent to a server it was not entered for. The model names follow LLM_MODEL: when the
    environment sets it, the page's default and per-role names are not used.
    """
    env_provider = normalize_provider(settings.LLM_PROVIDER)
    if env_provider == "scripted" or all(getattr(settings, name) for name in ENV_SETTINGS.values()):
        return {}  # nothing is left for the page to decide; spares the query
    if site is None:
        from autocoder.llm.selectors import site_model_config_get

        site = site_model_config_get()
    if site is None or not site.provider or env_provider not in ("", site.provider):
        return {}
    return {"provider": site.provider, "base_url": site.base_url, "model": site.model_for(role),
            # Read (and unsealed) only when it is the key in use: an unreadable stored key
            # must not break a set-up whose key comes from the environment.
            "api_key": "" if settings.LLM_API_KEY else site.api_key}


def layer(config: ProviderConfig, values: Mapping[str, object]) -> ProviderConfig:
    """`config` with the non-empty `values` on top.

    A key belongs to its endpoint: when a layer moves the role to another provider or URL
    without naming a key, the key below is dropped rather than sent to a different server.
    """
    changes = {name: value for name, value in values.items() if value not in ("", None)}
    if "provider" in changes:
        changes["provider"] = normalize_provider(str(changes["provider"]))
    moved = any(changes.get(name, getattr(config, name)) != getattr(config, name)
                for name in ("provider", "base_url"))
    if moved and "api_key" not in changes:
        changes["api_key"] = ""
    return dataclasses.replace(config, **changes)  # type: ignore[arg-type]


# Reply caps that hold a whole reply of each role from a capable model (docs/llm.md, "Reply
# caps"): a plan, two or three files of a plugin with their docstrings, its extra tests, a
# review, a reflection. A model given no cap writes until its context is full, which on a small
# machine takes longer than a whole run may; where the context window is known, each cap is
# fitted to what the prompt leaves of it (`fitted_cap`).
ROLE_MAX_TOKENS: dict[str, int] = {
    "analyst": 1000, "architect": 1200, "implementer": 6000, "tester": 3000,
    "reviewer": 1000, "reflector": 700,
}
# The length the prompts ask of the roles that write prose, in words: well inside the cap
# (about 1.3 tokens a word in English, more in a JSON reply), so a reply that keeps to it is
# never cut.
REPLY_WORDS: dict[str, int] = {"analyst": 300, "architect": 300, "reviewer": 250,
                               "reflector": 150}
# Prompts are measured in characters. A prompt is kept short enough at three characters a token
# (English and code run at about four: an over-estimate is the safe side for what must fit);
# a reply's cap is fitted beside it at four, so that a prompt near its budget does not leave a
# reply too little room (a server stops a reply where the window ends in any case).
CHARS_PER_TOKEN = 3
_FIT_CHARS_PER_TOKEN = 4
_CONTEXT_MARGIN_TOKENS = 16  # the chat template's own tokens around the messages


def role_max_tokens(role: str) -> int:
    """The role's reply cap before any team's override (LLM_MAX_TOKENS_<ROLE>, else
    LLM_MAX_TOKENS, else the role's default): what the scripted provider is held to."""
    own = (settings.LLM_ROLE_OVERRIDES.get(role) or {}).get("max_tokens")
    return int(str(own or settings.LLM_MAX_TOKENS or ROLE_MAX_TOKENS.get(role, 0)))


def context_tokens(config: ProviderConfig | None) -> int:
    """The model's context window in tokens (prompt and reply together), 0 when unknown:
    LLM_CONTEXT_TOKENS, else for the model run in the worker its LLM_N_CTX."""
    chosen = int(getattr(settings, "LLM_CONTEXT_TOKENS", 0) or 0)
    if chosen > 0:
        return chosen
    if config is not None and normalize_provider(config.provider) == "llamacpp":
        return int(settings.LLM_N_CTX)
    return 0


def fitted_cap(cap: int, *, context: int, prompt_chars: int) -> int:
    """`cap`, or less where the context window cannot hold that much beside the prompt; never
    less than a quarter of the window (or the cap where it is smaller): a prompt that long is
    what must shrink, and a reply of a few tokens would say nothing."""
    if context <= 0:
        return cap
    room = context - prompt_chars // _FIT_CHARS_PER_TOKEN - _CONTEXT_MARGIN_TOKENS
    return max(min(cap, room), min(cap, context // 4))


def prompt_room_chars(cap: int, *, context: int) -> int | None:
    """The most characters a prompt may have so that the role's reply keeps its room in the
    context window: its cap, or half the window where the cap is larger. None when the window
    is unknown."""
    if context <= 0:
        return None
    reply = min(cap, context // 2)
    return max(0, (context - reply - _CONTEXT_MARGIN_TOKENS) * CHARS_PER_TOKEN)


def role_config(role: str, *, team_id: int | None = None) -> ProviderConfig:
    """The configuration for `role`, with the team's override when `team_id` is given.

    Every role gets a reply cap (`max_tokens`): the role's default below, LLM_MAX_TOKENS for
    every role, LLM_MAX_TOKENS_<ROLE> for this one. Providers send it whatever door calls them.
    """
    if role not in ROLES:
        raise LLMConfigError(f"unknown role {role!r}; roles are {', '.join(ROLES)}")
    config = layer(default_config(role),
                   {"max_tokens": settings.LLM_MAX_TOKENS or ROLE_MAX_TOKENS[role]})
    config = layer(config, settings.LLM_ROLE_OVERRIDES.get(role, {}))
    if team_id is not None:
        from autocoder.llm.selectors import team_model_override_get

        override = team_model_override_get(team_id=team_id, role=role)
        if override is not None:
            config = layer(config, override.as_layer())
    return config


def build_provider(config: ProviderConfig, *,
                   script: dict[str, list[str]] | None = None) -> Provider:
    """A provider for `config`. Passing `script` selects the scripted provider.

    Note: a ScriptedProvider keeps its position per instance; build it once per run (or
    save `position()` and `restore()` it) instead of calling this for every step.
    """
    provider = normalize_provider(config.provider)
    if script is not None or provider == "scripted":
        return _scripted(script)
    if provider == "openai":
        from autocoder.llm.openai_compat import OpenAICompatibleProvider

        return OpenAICompatibleProvider(config)
    if provider == "anthropic":
        from autocoder.llm.anthropic_provider import AnthropicProvider

        return AnthropicProvider(config)
    if provider == "llamacpp":
        from autocoder.llm.llamacpp import LlamaCppProvider

        return LlamaCppProvider(config, n_ctx=settings.LLM_N_CTX)
    raise LLMConfigError(f"unknown LLM provider {config.provider!r}; "
                         f"choose one of {', '.join(PROVIDERS)}")


def provider_for_role(role: str, *, team_id: int | None = None,
                      script: dict[str, list[str]] | None = None,
                      provider: str | None = None) -> Provider:
    """The provider `role` should use; `provider` (a run's choice) replaces the configured one."""
    config = role_config(role, team_id=team_id)
    if provider:
        config = layer(config, {"provider": provider})
    return build_provider(config, script=script)


def _scripted(script: dict[str, list[str]] | None) -> ScriptedProvider:
    if script is not None:
        return ScriptedProvider(script)
    if settings.LLM_SCRIPT:
        return ScriptedProvider.from_file(Path(settings.LLM_SCRIPT))
    raise LLMConfigError("the scripted provider needs a script: pass --script FILE.json or set "
                         "LLM_SCRIPT; to use a real model set LLM_PROVIDER (see docs/llm.md)")
