"""Words of the invocation log: who or what made each call."""

from __future__ import annotations

from django import template

from tools.models import Invocation

register = template.Library()

Caller = Invocation.Caller
# The events the portal delivers (tools/services/events.py, and "schedule" before a scheduled
# command), named as what happened.
EVENT_WORDS = {
    "activated": "activation",
    "deactivated": "switch-off (another version, or Stop using)",
    "settings_changed": "settings change",
    "schedule": "notice before a scheduled call",
}


@register.filter
def caller_label(entry: Invocation) -> str:
    """A person, a token or a schedule by name, or the portal with the event it delivered."""
    if entry.caller == Caller.USER:
        return entry.user.get_username() if entry.user is not None else "a former member"
    if entry.caller == Caller.TOKEN:
        return f"token “{entry.token.name if entry.token is not None else 'deleted'}”"
    if entry.caller == Caller.MCP:
        name = entry.token.name if entry.token is not None else "deleted"
        return f"an assistant (via MCP), token “{name}”"
    if entry.caller == Caller.SCHEDULE:
        return f"schedule “{entry.schedule.name if entry.schedule is not None else 'deleted'}”"
    if entry.caller == Caller.TRIGGER:
        return "a webhook trigger"
    return f"the portal: {EVENT_WORDS.get(entry.command, f'event “{entry.command}”')}"
