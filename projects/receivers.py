"""The bridge from the engine to the portal's review side.

The engine creates approval requests where its loop pauses and must not depend on how the
portal tells people about them; this receiver hands each new request to the portal's services
once the engine's transaction has committed (a rolled-back step notifies nobody).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from projects.models import ApprovalRequest

logger = logging.getLogger(__name__)


@receiver(post_save, sender=ApprovalRequest, dispatch_uid="projects.approval_requested")
def approval_requested(sender: type[ApprovalRequest], instance: ApprovalRequest, created: bool,
                       raw: bool = False, **kwargs: Any) -> None:
    if created and not raw:
        pk = instance.pk
        transaction.on_commit(lambda: _announce(pk), robust=True)


def _announce(pk: int) -> None:
    from projects.services.approvals import approvals_supersede
    from projects.services.notifications import notifications_approval_requested

    approval = (ApprovalRequest.objects.select_related("project__team", "run")
                .filter(pk=pk).first())
    if approval is None or approval.status != ApprovalRequest.Status.PENDING:
        return
    with transaction.atomic():
        approvals_supersede(approval=approval)
        notifications_approval_requested(approval=approval)
