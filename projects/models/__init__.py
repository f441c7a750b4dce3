"""Models of the projects app, one module per area; import them from here."""

from projects.models.interviews import Interview
from projects.models.reviews import ApprovalVote, AuditEntry, Notification
from projects.models.runs import (
    ApprovalRequest,
    Iteration,
    LLMCall,
    LoopEvent,
    Project,
    Run,
    StepOutbox,
)
from projects.models.teams import Membership, Team

__all__ = [
    "ApprovalRequest",
    "ApprovalVote",
    "AuditEntry",
    "Interview",
    "Iteration",
    "LLMCall",
    "LoopEvent",
    "Membership",
    "Notification",
    "Project",
    "Run",
    "StepOutbox",
    "Team",
]
