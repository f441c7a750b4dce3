"""Contributions to shared pages, registered by the apps that make them (Wagtail's hooks are the
model): a page lower in the stack lists what the apps above it add without importing them.

An app registers in its AppConfig.ready (`hooks.register(name, item)`); the page reads
`hooks.get(name)` when it is built. The hook names in use, and what each item is:
- "inbox_source": a projects.selectors.inbox.InboxSource, rows of the reviewer's inbox (the
  marketplace adds uploaded versions, marketplace/inbox.py).
- "approval_extra": a projects.approval_extras.ApprovalExtra, what an app adds to an approval
  request's page and decision (the marketplace: the publish proposal, marketplace/approvals.py).
- "try_settings": a callable (user_id=, team_id=, version=) -> marketplace.services.trying.
  TrySettings | None, the settings and secrets "Try it" gets from the trier's team (the tools
  app: tools/services/tool_settings.py try_settings_of).
- "insight_section": a callable (team=, period=) -> projects.selectors.insights.InsightSection
  | None, a section of the team's "How generation is going" page (the tools app: the changes
  asked of each plugin and whether its error rate went down, tools/insights.py).
docs/development.md ("Layers") says more.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

_registry: defaultdict[str, list[Any]] = defaultdict(list)


def register(name: str, item: Any) -> None:
    """Add `item` to the hook `name`; registering the same item twice adds it once."""
    if item not in _registry[name]:
        _registry[name].append(item)


def get(name: str) -> list[Any]:
    """The items registered for `name`, in the order they were registered."""
    return list(_registry[name])
