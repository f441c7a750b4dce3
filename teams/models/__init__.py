"""Models of the teams app, one module per area; import them from here.

Their tables keep the names they had in the projects app (Meta.db_table, "projects_team", ...):
moving them here changed Django's state only (migrations/0001_initial.py).
"""

from teams.models.invitations import Invitation
from teams.models.records import AppendOnlyError, AuditEntry, Notification
from teams.models.teams import GenerationMode, Membership, SiteTeamSettings, Team

__all__ = [
    "AppendOnlyError",
    "AuditEntry",
    "GenerationMode",
    "Invitation",
    "Membership",
    "Notification",
    "SiteTeamSettings",
    "Team",
]
