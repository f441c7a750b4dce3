"""What an app above the portal adds to the review page and the decision of one kind of
approval request, registered as an "approval_extra" hook (autocoder/hooks.py) in its
AppConfig.ready. The marketplace adds the publish choice to a run's publish request: the
version, visibility and category that approving publishes (marketplace/approvals.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from django import forms
from django.contrib.auth.models import User

from autocoder import hooks
from runs.models import ApprovalRequest
from runs.services.approvals import VoteOutcome

APPROVAL_EXTRA = "approval_extra"


class ChoiceRefused(Exception):
    """Approving with the choice made on the page is not possible (a version already taken,
    a name of another team...): nothing was decided; `errors` say why, in plain words."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class ApprovalExtra(Protocol):
    kind: str  # the ApprovalRequest.Kind it adds to
    approve_label: str  # the approve choice's words when there is something to choose

    def choice(self, approval: ApprovalRequest) -> Any:
        """What approving the pending `approval` chooses (None: nothing to choose)."""

    def add_fields(self, form: forms.Form, choice: Any) -> None:
        """Add the choice's fields to the decision form."""

    def approve(self, *, approval: ApprovalRequest, user: User,
                data: dict[str, Any]) -> VoteOutcome:
        """Approve with the form's cleaned `data`; ChoiceRefused when it cannot be done."""

    def page(self, approval: ApprovalRequest) -> dict[str, Any]:
        """What the review page shows besides (e.g. the version a decision published)."""


def approval_extra(kind: str) -> ApprovalExtra | None:
    """The extra registered for approval requests of `kind`, if any."""
    return next((extra for extra in hooks.get(APPROVAL_EXTRA) if extra.kind == kind), None)
