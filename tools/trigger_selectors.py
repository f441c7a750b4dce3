"""Reading triggers and their deliveries for the pages (tools/services/triggers.py writes)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from marketplace.models import Plugin
from teams.models import Team
from tools.models import Delivery, Trigger


def triggers_of(team: Team, plugin: Plugin) -> QuerySet[Trigger]:
    return Trigger.objects.filter(team=team, plugin=plugin).select_related("approved_by")


def trigger_at(public_id: str) -> Trigger | None:
    """The trigger whose address this is (None: there is none, or no longer)."""
    return (Trigger.objects.select_related("team", "plugin").filter(public_id=public_id)
            .first())


def trigger_rows(team: Team, plugin: Plugin, *, per_trigger: int = 10) -> list[dict[str, Any]]:
    """Each trigger with its latest deliveries (and the calls they started)."""
    rows = []
    for trigger in triggers_of(team, plugin):
        deliveries = list(Delivery.objects.filter(trigger=trigger)
                          .select_related("invocation")[:per_trigger])
        rows.append({"trigger": trigger, "deliveries": deliveries})
    return rows
