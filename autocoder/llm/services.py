"""Writes for the llm app: keyword-only, typed, named <entity>_<action>."""

from __future__ import annotations

from autocoder.llm.models import TeamModelOverride
from projects.models import Team

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
