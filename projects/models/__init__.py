"""Models of the projects app, one module per area; import them from here."""

from projects.models.teams import Membership, Team

__all__ = ["Membership", "Team"]
