"""Reads of the generation switch (docs/portal.md, "Pausing generation"): the site's mode, a
team's, and the one that applies to a team's runs, the strictest of the two."""

from __future__ import annotations

from dataclasses import dataclass

from teams.models import GenerationMode, Team
from teams.selectors.site import site_team_settings_get

GENERATION_ACTION = "generation.mode"
_STRICTNESS = {GenerationMode.AUTOMATIC: 0, GenerationMode.MANUAL: 1, GenerationMode.PAUSED: 2}
WORDS = {
    GenerationMode.MANUAL: "Generation is set to manual: each new run waits for a reviewer to"
                           " press Start.",
    GenerationMode.PAUSED: "Generation is paused: no run takes a new step until it is resumed."
                           " Nothing is lost; runs go on where they stopped.",
}


@dataclass(frozen=True)
class GenerationState:
    mode: str  # the one that applies: GenerationMode
    site_mode: str
    team_mode: str

    @property
    def by_site(self) -> bool:
        """Whether the site's switch (not the team's) is what holds the runs."""
        return self.site_mode == self.mode and self.mode != GenerationMode.AUTOMATIC

    @property
    def words(self) -> str:
        """What the board and run pages say while generation is not automatic ("" if it is)."""
        text = WORDS.get(GenerationMode(self.mode), "")
        if text and self.by_site:
            text += " (set by a site admin for every team)"
        return text


def strictest(*modes: str) -> str:
    return max(modes, key=lambda mode: _STRICTNESS[GenerationMode(mode)])


def generation_state(team: Team | None = None, *, team_id: int | None = None) -> GenerationState:
    """The mode that applies to a team's runs (the site's alone without a team)."""
    site = site_team_settings_get().generation_mode
    if team is None and team_id is not None:
        team_mode = (Team.objects.filter(pk=team_id).values_list("generation_mode", flat=True)
                     .first() or GenerationMode.AUTOMATIC)
    else:
        team_mode = team.generation_mode if team is not None else GenerationMode.AUTOMATIC
    return GenerationState(mode=strictest(site, team_mode), site_mode=site, team_mode=team_mode)
