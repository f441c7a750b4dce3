"""What the tools app adds to the reviewer's inbox (projects/selectors/inbox.py): change
requests waiting for the team that owns the plugin (tools/services/changes.py). Registered as
an "inbox_source" hook by ToolsConfig.ready."""

from __future__ import annotations

from django.urls import reverse

from projects.selectors.inbox import InboxItem, InboxSource
from tools.change_selectors import changes_awaiting
from tools.models import ChangeRequest

CHANGE = "change"


def change_items(pks: list[int]) -> dict[int, InboxItem]:
    return {request.pk: change_item(request) for request in ChangeRequest.objects
            .select_related("plugin", "team", "asked_by", "from_team").filter(pk__in=pks)}


def change_item(request: ChangeRequest) -> InboxItem:
    asker = request.asked_by.get_username() if request.asked_by else "someone"
    if request.from_team_id != request.team_id:
        asker = f"{asker} ({request.from_team.name})"
    return InboxItem(what="Change asked", subject=request.plugin.name, team=request.team.name,
                     requested_by=asker, created_at=request.created_at,
                     url=reverse("tools:change", args=[request.pk]), source=CHANGE)


INBOX_CHANGES = InboxSource(name=CHANGE, awaiting=changes_awaiting, items=change_items)
