"""Models of the projects app (teams, invitations, the site's team settings, projects,
interviews, the audit log, notifications, comments), one module per area; import them from
here. Runs and approvals are the runs app's (runs/models.py)."""

from projects.models.comments import Comment
from projects.models.interviews import Interview
from projects.models.invitations import Invitation
from projects.models.projects import Project
from projects.models.reviews import AuditEntry, Notification
from projects.models.teams import Membership, SiteTeamSettings, Team

__all__ = [
    "AuditEntry",
    "Comment",
    "Interview",
    "Invitation",
    "Membership",
    "Notification",
    "Project",
    "SiteTeamSettings",
    "Team",
]
