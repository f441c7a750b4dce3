"""Reads of the projects app, one module per area; the team selectors are re-exported here."""

from projects.selectors.teams import team_members, teams_for_user

__all__ = ["team_members", "teams_for_user"]
