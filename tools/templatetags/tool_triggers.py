"""The triggers part of a tool's page (templates/tools/_triggers.html), and how a delivery's
outcome is marked."""

from __future__ import annotations

from django import template

from teams.models import Team
from tools.models import Activation, Delivery, Invocation
from tools.trigger_selectors import trigger_rows

register = template.Library()


@register.inclusion_tag("tools/_triggers.html")
def trigger_section(team: Team, activation: Activation, may_decide: bool) -> dict[str, object]:
    """Each trigger with its latest five deliveries; the way to set one up for admins."""
    return {"team": team, "plugin": activation.plugin, "may_decide": may_decide,
            "rows": trigger_rows(team, activation.plugin, per_trigger=5)}


@register.filter
def delivery_badge(delivery: Delivery) -> str:
    """ok, warn or bad: a started call that then failed or was refused is bad."""
    if delivery.outcome == Delivery.Outcome.PAUSED:
        return "warn"
    if delivery.outcome == Delivery.Outcome.CHECKED:
        return "ok"
    if delivery.outcome != Delivery.Outcome.STARTED:
        return "bad"
    call = delivery.invocation
    if call is None or call.status in (Invocation.Status.PENDING, Invocation.Status.RUNNING):
        return "warn"
    return "ok" if call.status == Invocation.Status.OK else "bad"
