"""The marketplace's answers to the runs app (runs/signals.py), connected by MarketplaceConfig.

- a decided publish request goes on to the marketplace (published, or left as it was);
- a run's publish request carries the marketplace's proposal (version, visibility, category,
  the files it would serve).
The portal's answers to the same signals (notifications, the audit log) are projects/receivers.py;
the projects app comes first in INSTALLED_APPS, so the requester is told before publishing starts.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth.models import User
from django.dispatch import receiver

from marketplace.proposals import publish_payload_default
from marketplace.services.gate import publish_approval_decided
from runs import signals
from runs.models import ApprovalRequest, Run

logger = logging.getLogger(__name__)


@receiver(signals.approval_decided, dispatch_uid="marketplace.approval_decided")
def approval_decided(sender: Any, approval: ApprovalRequest, actor: User,
                     **kwargs: Any) -> None:
    if approval.kind == ApprovalRequest.Kind.PUBLISH:
        publish_approval_decided(approval=approval)


@receiver(signals.publish_payload_wanted, dispatch_uid="marketplace.publish_payload_wanted")
def publish_payload_wanted(sender: Any, run: Run, files: dict[str, str],
                           **kwargs: Any) -> dict[str, Any]:
    """The marketplace's proposal for the publish request; an unreadable plugin.toml leaves it
    out (publishing says why)."""
    try:
        return publish_payload_default(team=run.project.team, files=files)
    except ValueError:
        logger.info("run %s: no publish proposal, plugin.toml is not readable", run.id)
        return {}
