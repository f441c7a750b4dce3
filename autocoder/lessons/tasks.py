"""Dramatiq actors of the lessons app: thin, they take ids and call a service."""

from __future__ import annotations

import dramatiq

from autocoder.lessons.team_indexes import BUILD_ACTOR, team_index_build


# A team's index over 50,000 lessons takes a few minutes to build on two cores; the watchdog's
# sweep sends the build again if it did not happen, so a failed one is not retried here.
@dramatiq.actor(actor_name=BUILD_ACTOR, max_retries=0, time_limit=60 * 60 * 1000)
def lesson_team_index_build(team_id: int) -> None:
    """Build the HNSW index of one big team's lessons (docs/lessons.md)."""
    team_index_build(team_id)
