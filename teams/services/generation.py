"""Setting the generation switch, for the site (site admins) or a team (its admins), audited.
Letting held runs go on afterwards is the runs app's (runs/services/generation.py)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from teams.models import GenerationMode, SiteTeamSettings, Team
from teams.selectors.generation import GENERATION_ACTION
from teams.services.audit import audit_record


@transaction.atomic
def generation_mode_save(*, actor: User | None, mode: str, team: Team | None = None) -> str:
    """Save `mode` for `team` (None: the whole site); returns the mode it had before.
    ValueError for a mode that is not one of GenerationMode."""
    if mode not in GenerationMode.values:
        raise ValueError(f"the generation mode must be one of {', '.join(GenerationMode.values)}"
                         f" (got {mode!r})")
    if team is None:
        SiteTeamSettings.objects.get_or_create(pk=SiteTeamSettings.SINGLETON_ID)
        target: Team | SiteTeamSettings = SiteTeamSettings.objects.select_for_update().get(
            pk=SiteTeamSettings.SINGLETON_ID)
    else:
        target = Team.objects.select_for_update().get(pk=team.pk)
    before = target.generation_mode
    if before != mode:
        target.generation_mode = mode
        target.save(update_fields=["generation_mode"])
        where = f"the team {team.name}" if team is not None else "every team (the whole site)"
        audit_record(actor=actor, action=GENERATION_ACTION, team=team, target=target,
                     target_repr=f"{GenerationMode(mode).label.lower()} for {where}",
                     before={"generation_mode": before}, after={"generation_mode": mode})
    if team is not None:
        team.generation_mode = mode
    return before
