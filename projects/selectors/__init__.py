"""Reads of the projects app, one module per area; the team selectors are re-exported here."""

from projects.selectors.teams import request_memberships, team_members, teams_for_user

__all__ = ["request_memberships", "team_members", "teams_for_user"]
