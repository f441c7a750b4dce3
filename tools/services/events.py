"""Events the portal delivers to a plugin's `on_event` (docs/plugins.md, "Events"):
`activated`, `deactivated`, `settings_changed` here, `schedule` before a scheduled command
(invocations.py). Each is queued like a call from the form and logged with caller "event"."""

from __future__ import annotations

import json
from typing import Any

from django.db import transaction

from autocoder import durable
from marketplace.models import PluginVersion
from tools.models import Invocation
from tools.services.tool_changes import tools_changed_announce

# The actor that runs queued calls and events (tools/tasks.py).
INVOKE_ACTOR = "tool_invocation_run"


def json_size(value: Any) -> int:
    """Bytes of `value` as compact JSON: what the log and the limits count."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def tool_event_queue(*, team_id: int, version: PluginVersion, event: str,
                     data: dict[str, object]) -> Invocation:
    """Deliver `event` to the version's on_event on a worker once the caller's transaction
    commits (through the outbox: a Redis outage delays it, loses nothing)."""
    with transaction.atomic():
        invocation = Invocation.objects.create(
            team_id=team_id, plugin_id=version.plugin_id, version=version, command=event,
            caller=Invocation.Caller.EVENT, payload=data, input_bytes=json_size(data))
        durable.outbox_message_queue(actor=INVOKE_ACTOR, args=[invocation.pk])
    return invocation


def activation_events_queue(*, team_id: int, new: PluginVersion | None,
                            old: PluginVersion | None) -> None:
    """`deactivated` to the version leaving, `activated` to the one coming (and assistants
    connected over MCP hear that the team's tools changed)."""
    tools_changed_announce(team_ids=[team_id])
    if old is not None and (new is None or old.pk != new.pk):
        tool_event_queue(team_id=team_id, version=old, event="deactivated",
                         data={"version": old.version})
    if new is not None:
        tool_event_queue(team_id=team_id, version=new, event="activated",
                         data={"version": new.version,
                               "previous_version": old.version if old else None})
