"""The publisher's usage figures of a plugin as a tool, for the marketplace plugin page."""

from __future__ import annotations

from django import template
from django.conf import settings

from marketplace.models import Plugin
from tools.selectors import may_see_usage, plugin_usage

register = template.Library()


@register.inclusion_tag("tools/_usage_card.html", takes_context=True)
def tool_usage(context: dict[str, object], plugin: Plugin) -> dict[str, object]:
    """Counts for the plugin's own team only (nothing for anyone else)."""
    request = context.get("request")
    user = getattr(request, "user", None)
    shown = context.get("shown")
    # Site admins get the way to the kill switch for the version shown (no figures).
    kill = shown if user is not None and user.is_staff and shown is not None else None
    if user is None or not may_see_usage(user, plugin):
        return {"usage": None, "kill": kill, "plugin": plugin}
    return {"usage": plugin_usage(plugin), "kill": kill, "plugin": plugin,
            "retention_days": settings.TOOLS_LOG_RETENTION_DAYS}
