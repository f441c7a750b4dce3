"""Reads for the llm app."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from autocoder.llm.env import ENV_SETTINGS, normalize_provider
from autocoder.llm.models import ModelPrice, SiteModelConfig, TeamModelOverride
from autocoder.llm.types import ROLES
from teams.models import AuditEntry

# The audit log's actions for the Model page (site-wide: recorded without a team).
SITE_MODEL_ACTION = "model.settings_update"
MODEL_PRICE_ACTION = "model.price_update"


def team_model_override_get(*, team_id: int, role: str) -> TeamModelOverride | None:
    return TeamModelOverride.objects.filter(team_id=team_id, role=role).first()


def team_model_override_list(*, team_id: int) -> list[TeamModelOverride]:
    return list(TeamModelOverride.objects.filter(team_id=team_id).order_by("role"))


def site_model_config_get() -> SiteModelConfig | None:
    return SiteModelConfig.objects.filter(pk=SiteModelConfig.SINGLETON_ID).first()


@dataclass(frozen=True)
class EnvValue:
    """A Model page field that the environment sets: the page shows it read-only."""

    variable: str
    value: str  # what the page may show; never a key


def site_model_env_values() -> dict[str, EnvValue]:
    """{field: EnvValue} for each page field the environment sets (the environment wins).

    Per-role model names count too (`model_<role>` from LLM_MODEL_<ROLE>), and LLM_MODEL
    makes every per-role name the environment's, since it sets the model of every role.
    """
    found: dict[str, EnvValue] = {}
    for field, variable in ENV_SETTINGS.items():
        value = str(getattr(settings, variable) or "")
        if value:
            shown = "set (hidden)" if field == "api_key" else value
            found[field] = EnvValue(variable, normalize_provider(shown)
                                    if field == "provider" else shown)
    for role in ROLES:
        role_model = str(settings.LLM_ROLE_OVERRIDES.get(role, {}).get("model", "") or "")
        if role_model:
            found[f"model_{role}"] = EnvValue(f"LLM_MODEL_{role.upper()}", role_model)
        elif "model" in found:
            found[f"model_{role}"] = found["model"]
    return found


def site_model_history(*, limit: int = 10) -> list[AuditEntry]:
    """The latest changes made on the Model page, newest first."""
    return list(AuditEntry.objects.filter(team=None, action=SITE_MODEL_ACTION)
                .order_by("-created_at", "-id")[:limit])


def model_price_list() -> list[ModelPrice]:
    return list(ModelPrice.objects.order_by("model"))
