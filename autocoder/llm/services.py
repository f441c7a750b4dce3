"""Writes for the llm app: keyword-only, typed, named <entity>_<action>."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from django.contrib.auth.models import User
from django.db import transaction

from autocoder.llm.models import ModelPrice, SiteModelConfig, TeamModelOverride
from autocoder.llm.selectors import MODEL_PRICE_ACTION, SITE_MODEL_ACTION
from autocoder.llm.types import ROLES, safe_url
from teams.models import Team
from teams.services.audit import audit_record

logger = logging.getLogger(__name__)

KEEP_KEY = None


def team_model_override_set(
    *, team: Team, role: str, provider: str = "", model: str = "", base_url: str = "",
    api_key: str | None = KEEP_KEY,
) -> TeamModelOverride:
    """Create or replace a team's override for `role`; `api_key=None` keeps the stored key.

    Validated like the admin form, so a bad value raises ValidationError and nothing is saved.
    """
    override = (TeamModelOverride.objects.filter(team=team, role=role).first()
                or TeamModelOverride(team=team, role=role))
    override.provider = provider.strip()
    override.model = model.strip()
    override.base_url = base_url.strip()
    if api_key is not KEEP_KEY:
        override.api_key = api_key.strip()
    override.full_clean()
    override.save()
    return override


def team_model_override_delete(*, team: Team, role: str) -> bool:
    deleted, _ = TeamModelOverride.objects.filter(team=team, role=role).delete()
    return bool(deleted)


# -- the site's model (the Model page) -----------------------------------------------------------


@dataclass(frozen=True)
class SiteModelSaved:
    config: SiteModelConfig
    changed: bool
    released: list[int] = field(default_factory=list)  # held runs that went on at once


def site_model_config_set(
    *, actor: User, provider: str, base_url: str = "", model: str = "",
    role_models: Mapping[str, str] | None = None, api_key: str | None = KEEP_KEY,
    release: bool = True,
) -> SiteModelSaved:
    """Save the site's model set-up (validated; ValidationError saves nothing), record the
    change in the audit log, and let runs held for want of a model go on when it now works.

    `api_key=None` keeps the stored key, "" removes it. `release=False` leaves held runs to
    the watchdog (it asks every minute)."""
    with transaction.atomic():
        site = (SiteModelConfig.objects.select_for_update()
                .filter(pk=SiteModelConfig.SINGLETON_ID).first()
                or SiteModelConfig(pk=SiteModelConfig.SINGLETON_ID))
        before = _audit_view(site)
        site.provider, site.base_url = provider.strip(), base_url.strip()
        site.model = model.strip()
        site.role_models = {role: name.strip() for role, name in (role_models or {}).items()
                            if name and name.strip()}
        new_key = bool(api_key and api_key.strip())
        if api_key is not KEEP_KEY:
            site.api_key = api_key.strip()
        site.updated_by = actor
        site.full_clean()
        site.save()
        after = _audit_view(site, new_key=new_key)
        changed = after != before
        if changed:
            audit_record(actor=actor, action=SITE_MODEL_ACTION, team=None, target=site,
                         before=before, after=after)
    released = site_model_held_runs_release() if release else []
    return SiteModelSaved(config=site, changed=changed, released=released)


def site_model_local_select(*, actor: User, model_path: str) -> SiteModelSaved:
    """Use a local GGUF file for every role (what choosing the downloaded local model does).
    The stored address and key stay, unused, for a later switch back."""
    site = SiteModelConfig.objects.filter(pk=SiteModelConfig.SINGLETON_ID).first()
    return site_model_config_set(actor=actor, provider=SiteModelConfig.Provider.LLAMACPP,
                                 base_url=site.base_url if site else "", model=model_path,
                                 role_models={})


# Who lets runs held for want of a model go on: the runs app registers itself at start-up
# (runs/apps.py), as the LLM layer sits below it and does not import it.
HELD_RUNS_RELEASERS: list[Callable[[], list[int]]] = []


def site_model_held_runs_release() -> list[int]:
    """Runs held for want of a model go on now if the model works (offline check)."""
    released = [run_id for release in HELD_RUNS_RELEASERS for run_id in release()]
    if released:
        logger.info("model set up: released held runs %s", released)
    return released


def _audit_view(site: SiteModelConfig, *, new_key: bool = False) -> dict[str, object]:
    """What the audit log keeps of the set-up: never the key, only whether one is stored."""
    key = site.api_key_status
    return {"provider": site.provider, "base_url": safe_url(site.base_url),
            "model": site.model, "role_models": {role: site.role_models[role] for role in ROLES
                                                 if role in site.role_models},
            "api_key": f"{key} (new key entered)" if new_key else key}


# -- prices (the Prices page) --------------------------------------------------------------------


def model_price_set(*, actor: User, model: str, prompt_per_million: Decimal,
                    completion_per_million: Decimal) -> ModelPrice:
    """Create or change a model's price (validated: ValidationError saves nothing); the change
    goes to the audit log. It counts from the next call: calls already made keep their cost."""
    with transaction.atomic():
        price = (ModelPrice.objects.select_for_update().filter(model=model.strip()).first()
                 or ModelPrice(model=model.strip()))
        before = _price_view(price) if price.pk else None
        price.prompt_per_million = prompt_per_million
        price.completion_per_million = completion_per_million
        price.updated_by = actor
        price.full_clean()
        price.save()
        after = _price_view(price)
        if after != before:
            audit_record(actor=actor, action=MODEL_PRICE_ACTION, team=None, target=price,
                         before=before, after=after)
    return price


def model_price_delete(*, actor: User, model: str) -> bool:
    with transaction.atomic():
        price = ModelPrice.objects.select_for_update().filter(model=model).first()
        if price is None:
            return False
        audit_record(actor=actor, action=MODEL_PRICE_ACTION, team=None, target=price,
                     before=_price_view(price), after=None)
        price.delete()
    return True


def _price_view(price: ModelPrice) -> dict[str, str]:
    return {"model": price.model, "prompt_per_million": str(price.prompt_per_million),
            "completion_per_million": str(price.completion_per_million)}
