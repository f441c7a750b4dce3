"""Reads for the llm app."""

from __future__ import annotations

from autocoder.llm.models import TeamModelOverride


def team_model_override_get(*, team_id: int, role: str) -> TeamModelOverride | None:
    return TeamModelOverride.objects.filter(team_id=team_id, role=role).first()


def team_model_override_list(*, team_id: int) -> list[TeamModelOverride]:
    return list(TeamModelOverride.objects.filter(team_id=team_id).order_by("role"))
