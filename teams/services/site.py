"""The site's settings for teams (who may start one, the budgets a new team starts with), set
by site admins on /settings/teams/."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import User
from django.db import transaction

from teams.models import SiteTeamSettings
from teams.selectors.site import SITE_TEAMS_ACTION
from teams.services.audit import audit_record

FIELDS = ("team_creation", "default_monthly_budget", "default_run_budget")


@transaction.atomic
def site_team_settings_update(*, actor: User, team_creation: str,
                              default_monthly_budget: Decimal | None,
                              default_run_budget: Decimal | None) -> SiteTeamSettings:
    """Save the settings; the audit entry names what changed, before and after. The budgets
    apply to teams created from now on, never to existing ones."""
    SiteTeamSettings.objects.get_or_create(pk=SiteTeamSettings.SINGLETON_ID)
    site = SiteTeamSettings.objects.select_for_update().get(pk=SiteTeamSettings.SINGLETON_ID)
    before = {field: getattr(site, field) for field in FIELDS}
    site.team_creation = team_creation
    site.default_monthly_budget, site.default_run_budget = (default_monthly_budget,
                                                            default_run_budget)
    changed = [field for field in FIELDS if getattr(site, field) != before[field]]
    if changed:
        site.updated_by = actor
        site.save()
        audit_record(actor=actor, action=SITE_TEAMS_ACTION, team=None, target=site,
                     before={field: before[field] for field in changed},
                     after={field: getattr(site, field) for field in changed})
    return site

