"""Reads of the teams app, one module per area; the team selectors are re-exported here."""

from teams.selectors.teams import request_memberships, team_members, teams_for_user

__all__ = ["request_memberships", "team_members", "teams_for_user"]
