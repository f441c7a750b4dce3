"""The schedules part of a tool's page (templates/tools/_schedules.html): each schedule with its
next run, what that run will send and its recent runs; the form, filled in with the schedule
the request asked for when there is one; and what its buttons post."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages

from teams.http import AuthenticatedHttpRequest
from teams.models import Membership, Team
from tools import selectors
from tools.api_commands import api_example
from tools.declared import command_names
from tools.forms import output_blocks
from tools.models import Activation, Invocation
from tools.schedule_forms import ScheduleForm, initial_for
from tools.schedule_selectors import run_rows, schedule_offer, schedule_preview
from tools.services import schedules
from tools.services.periods import PICKER


def schedule_section(team: Team, membership: Membership, activation: Activation,
                     form: ScheduleForm | None = None) -> dict[str, object]:
    """The template's context for the schedules part."""
    offer = schedule_offer(activation.version)
    rows = _rows(team, activation)
    if offer is not None and any(row["schedule"].command == offer.command for row in rows):
        offer = None  # the team set it up already
    return {"schedules": rows, "may_schedule": membership.can_review,
            "schedule_form": form or _blank_form(team, activation, offer),
            "schedule_offer": offer, "schedule_open": form is not None or offer is not None,
            "period_picker": PICKER}


def _blank_form(team: Team, activation: Activation, offer: Any) -> ScheduleForm:
    command, sample = api_example(activation.version)
    initial: dict[str, object] = {"command": command, "payload": json.dumps(sample),
                               "time_zone": schedules.team_time_zone(team)}
    if offer is not None:
        initial.update(initial_for(offer.rule), name=offer.words[:80])
        if offer.command:
            initial["command"] = offer.command
        if offer.payload:
            initial["payload"] = offer.payload_json
    return ScheduleForm(initial=initial, commands=command_names(activation.version))


def _rows(team: Team, activation: Activation) -> list[dict[str, Any]]:
    """Each schedule, its rhythm in words, its next run, and its latest runs."""
    results = selectors.schedule_results(team, activation.plugin)
    found = []
    for schedule in selectors.schedules_of(team, activation.plugin):
        calls = results.get(schedule.pk, [])
        latest = next((c for c in calls if c.status == Invocation.Status.OK), None)
        try:
            preview = schedule_preview(schedule)
        except schedules.ScheduleError:
            preview = None
        found.append({"schedule": schedule, "when": schedules.describe(schedule),
                      "preview": preview, "runs": run_rows(schedule, calls), "latest": latest,
                      "blocks": output_blocks(latest.output_in_order) if latest else []})
    return found


def schedule_post(request: AuthenticatedHttpRequest, team: Team,
                  activation: Activation) -> ScheduleForm | None:
    """Act on the schedules form: None when done (a message says what happened), or the bound
    form with what to correct (nothing typed is lost)."""
    plugin, user = activation.plugin, request.user
    try:
        if request.POST.get("delete"):
            schedules.schedule_delete(team=team, plugin=plugin, user=user,
                                      schedule_id=_id(request.POST["delete"]))
            messages.success(request, "Schedule deleted.")
            return None
        if request.POST.get("resume"):
            if schedules.schedule_resume(team=team, plugin=plugin, user=user,
                                         schedule_id=_id(request.POST["resume"])):
                messages.success(request, "Schedule resumed: it runs as yours from now on.")
            return None
    except schedules.ScheduleError as exc:
        messages.error(request, str(exc))
        return None
    return _create(request, team, activation)


def _create(request: AuthenticatedHttpRequest, team: Team,
            activation: Activation) -> ScheduleForm | None:
    form = ScheduleForm(request.POST, commands=command_names(activation.version))
    if not form.is_valid():
        return form
    data = form.cleaned_data
    try:
        created = schedules.schedule_create(
            activation=activation, user=request.user, name=data.get("name") or "",
            command=data["command"], payload=form.payload_value, when=form.when,
            cron=data.get("cron") or "", time_zone=data["time_zone"])
    except schedules.ScheduleError as exc:
        form.add_error(None, str(exc))
        return form
    preview = schedule_preview(created)
    messages.success(request, f"Schedule saved: {schedules.describe(created)}. Next: "
                              f"{preview.next_words}.")
    return None


def _id(text: str) -> int:
    try:
        return int(text)
    except ValueError as exc:
        raise schedules.ScheduleError("No such schedule.") from exc
