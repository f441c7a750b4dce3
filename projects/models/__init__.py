"""Models of the projects app (interviews, comments), one module per area; import them from
here. Projects, their runs and approvals are the runs app's (runs/models.py); teams,
memberships, invitations, the audit log and notifications the teams app's (teams/models/)."""

from projects.models.comments import Comment
from projects.models.interviews import Interview

__all__ = ["Comment", "Interview"]
