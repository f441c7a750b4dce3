"""How fast a model writes (docs/llm.md, "How fast the model writes"): measured on its replies,
remembered per model (ModelSpeed), shown on the Model page and used to wait long enough for it.

A reply's speed is its tokens over its whole time, reading the prompt included: what a person
waiting for a reply of that length sees. Short replies say little about it (the prompt's reading
dominates), so only replies of MIN_TOKENS or more count; the figure is an average weighted
towards the latest replies, so a model moved to another machine shows its new speed soon.
"""

from __future__ import annotations

import logging

from autocoder.llm.env import normalize_provider
from autocoder.llm.types import DEADLINE, Completion, Provider, ProviderConfig, memory_key, safe_url

logger = logging.getLogger(__name__)

MIN_TOKENS = 20
NEW_WEIGHT = 0.3  # the latest reply's share of the figure


def speed_record(provider: Provider, completion: Completion) -> None:
    """Count `completion` in its model's speed; never fails the call it measures."""
    from autocoder.llm.models import ModelSpeed

    if provider.name == "scripted" or completion.finish_reason == DEADLINE:
        return  # a script has no speed; a reply cut at a deadline has no end to time
    if completion.completion_tokens < MIN_TOKENS or completion.latency_ms <= 0:
        return
    sample = completion.completion_tokens / (completion.latency_ms / 1000)
    name, base_url, model = memory_key(provider)
    try:
        known = ModelSpeed.objects.filter(provider=name, base_url=base_url, model=model).first()
        if known is None:
            ModelSpeed.objects.create(provider=name, base_url=base_url, model=model,
                                      tokens_per_s=sample, replies=1)
            return
        known.tokens_per_s = known.tokens_per_s * (1 - NEW_WEIGHT) + sample * NEW_WEIGHT
        known.replies += 1
        known.save(update_fields=["tokens_per_s", "replies", "updated_at"])
    except Exception:  # the database: the figure waits for the next reply
        logger.warning("could not record the speed of %s %s", name, model, exc_info=True)


def speed_of(provider: Provider | ProviderConfig) -> float | None:
    """The model's measured tokens a second, None when it has not been measured yet."""
    from autocoder.llm.models import ModelSpeed

    name, base_url, model = (_config_key(provider) if isinstance(provider, ProviderConfig)
                             else memory_key(provider))
    return ModelSpeed.objects.filter(provider=name, base_url=base_url, model=model).values_list(
        "tokens_per_s", flat=True).first()


def _config_key(config: ProviderConfig) -> tuple[str, str, str]:
    # As memory_key reads a provider built from `config`, without building it (a local model
    # would be loaded).
    return normalize_provider(config.provider), safe_url(config.base_url)[:500], config.model[:200]


def seconds_for(tokens: int, provider: Provider | ProviderConfig) -> float | None:
    """How long the model takes to write `tokens` tokens, by its measured speed (None when
    it has none yet)."""
    speed = speed_of(provider)
    return tokens / speed if speed else None
