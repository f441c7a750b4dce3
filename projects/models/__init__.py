"""Models of the projects app, one module per area; import them from here."""

from projects.models.runs import ApprovalRequest, Iteration, LLMCall, LoopEvent, Project, Run
from projects.models.teams import Membership, Team

__all__ = [
    "ApprovalRequest",
    "Iteration",
    "LLMCall",
    "LoopEvent",
    "Membership",
    "Project",
    "Run",
    "Team",
]
