"""Reads of the site's own settings for teams: who may start one, what a new team starts with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from autocoder.money import money
from teams.models import AuditEntry, SiteTeamSettings

SITE_TEAMS_ACTION = "site.team_settings"


def is_site_admin(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Site admins (staff) set up the whole site: the model, prices and these settings."""
    return bool(user.is_authenticated and (getattr(user, "is_staff", False)
                                           or getattr(user, "is_superuser", False)))


def site_team_settings_get() -> SiteTeamSettings:
    """The saved settings, or the defaults (unsaved) until a site admin saves them."""
    return (SiteTeamSettings.objects.filter(pk=SiteTeamSettings.SINGLETON_ID).first()
            or SiteTeamSettings(pk=SiteTeamSettings.SINGLETON_ID))


def team_creation_allowed(user: AbstractBaseUser | AnonymousUser) -> bool:
    """Whether `user` may start a team (and so run generation at the site's cost)."""
    if not user.is_authenticated:
        return False
    if is_site_admin(user):
        return True
    return site_team_settings_get().team_creation == SiteTeamSettings.TeamCreation.ANYONE


def team_budget_defaults() -> dict[str, Decimal | None]:
    """The budgets a new team starts with, by the Team fields they go to."""
    site = site_team_settings_get()
    return {"monthly_budget": site.default_monthly_budget,
            "run_budget": site.default_run_budget}


@dataclass(frozen=True)
class SettingsChange:
    """One saved change of these settings, in words."""

    actor_name: str
    created_at: datetime
    changes: list[str]


FIELD_WORDS = {"team_creation": "Who may start a team",
               "default_monthly_budget": "Monthly budget of a new team",
               "default_run_budget": "Budget per run of a new team"}


def _value_words(field: str, value: Any) -> str:
    if field == "team_creation":
        return str(dict(SiteTeamSettings.TeamCreation.choices).get(value, value))
    return money(Decimal(value)) if value not in (None, "") else "no limit"


def site_team_settings_history(*, limit: int = 10) -> list[SettingsChange]:
    """The latest changes of these settings (from the audit log), newest first, in words."""
    entries = (AuditEntry.objects.filter(team=None, action=SITE_TEAMS_ACTION)
               .order_by("-created_at", "-id")[:limit])
    return [SettingsChange(
        actor_name=entry.actor_name, created_at=entry.created_at,
        changes=[f"{FIELD_WORDS.get(field, field)}: "
                 f"{_value_words(field, (entry.before or {}).get(field))} → "
                 f"{_value_words(field, value)}" for field, value in (entry.after or {}).items()])
        for entry in entries]
