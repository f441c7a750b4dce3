"""A trigger's address, where other systems post their signed webhooks, and the tool's Triggers
page, where a team admin sets them up (docs/tools.md, "Triggers"). Thin: the services decide
(tools/services/triggers.py, tools/services/deliveries.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST

from runs.approval_rules import activation_refusal
from teams.http import AuthenticatedHttpRequest
from teams.models import Membership, Team
from teams.permissions import get_team_for_member
from tools import selectors
from tools.declared import command_names
from tools.models import Activation, Trigger
from tools.services import triggers
from tools.services.deliveries import Answer, delivery_receive
from tools.services.invocations import MAX_PAYLOAD_BYTES
from tools.trigger_forms import TriggerForm
from tools.trigger_selectors import trigger_at, trigger_rows
from tools.triggers_signing import SIGNATURE_HEADER, TOLERANCE_S

# The event must fit in the command's input, so a larger body is refused before it is read.
MAX_BODY_BYTES = MAX_PAYLOAD_BYTES
TOO_LARGE = f"The body is larger than {MAX_BODY_BYTES // 1024} KB: nothing was run."


def _json(answer: Answer) -> JsonResponse:
    response = JsonResponse(answer.body, status=answer.status)
    if answer.retry_after:
        response["Retry-After"] = str(answer.retry_after)
    return response


@csrf_exempt  # the signature, not a cookie, says who sent it: no session to forge with
@require_POST
def hook(request: HttpRequest, public_id: str) -> JsonResponse:
    """A delivery: answered at once, the command queued (202) or why not."""
    length = request.headers.get("Content-Length", "")
    if length.isdigit() and int(length) > MAX_BODY_BYTES:
        return _json(Answer(413, {"ok": False, "error": TOO_LARGE}))
    trigger = trigger_at(public_id)
    if trigger is None:
        return _json(Answer(404, {"ok": False, "error": "No trigger has this address (it may "
                                                        "have been deleted)."}))
    body = request.read(MAX_BODY_BYTES + 1)  # at most that much, whatever Content-Length says
    if len(body) > MAX_BODY_BYTES:
        return _json(Answer(413, {"ok": False, "error": TOO_LARGE}))
    return _json(delivery_receive(trigger=trigger, headers=request.headers, body=body,
                                  content_type=request.content_type or ""))


def _admin_tool(request: AuthenticatedHttpRequest, slug: str,
                name: str) -> tuple[Team, Membership, Activation]:
    team, membership = get_team_for_member(request.user, slug)
    activation = selectors.tool_for_member(team, name)
    if activation_refusal(membership=membership, team=team):
        raise PermissionDenied("Only team admins set up a tool's triggers.")
    return team, membership, activation


def hook_url(request: HttpRequest, trigger: Trigger) -> str:
    return request.build_absolute_uri(reverse("tools:hook", args=[trigger.public_id]))


@login_required
@require_http_methods(["GET", "POST"])
def tool_triggers(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, _, activation = _admin_tool(request, slug, name)
    commands = command_names(activation.version)
    form = TriggerForm(commands=commands)
    made: dict[str, object] = {}
    status = 200
    if request.method == "POST":
        try:
            done = _act(request, team, activation)
        except triggers.TriggerError as exc:
            messages.error(request, str(exc))
            return redirect("tools:triggers", team.slug, name)
        if isinstance(done, HttpResponse):
            return done
        if done is not None:
            made = done
        else:
            form, made, status = _create(request, activation, commands)
    rows = trigger_rows(team, activation.plugin)
    for row in rows:
        row["url"] = hook_url(request, row["trigger"])
    return render(request, "tools/triggers.html", {
        "team": team, "activation": activation, "plugin": activation.plugin, "form": form,
        "rows": rows, "made": made, "headers": SIGNATURE_HEADER,
        "tolerance_minutes": TOLERANCE_S // 60, "max_kb": MAX_BODY_BYTES // 1024},
        status=status)


def _act(request: AuthenticatedHttpRequest, team: Team,
         activation: Activation) -> HttpResponse | dict[str, object] | None:
    """Pause, resume, delete (a redirect), a new secret made here (what to show once), or
    None: the post sets a trigger up."""
    post, plugin, user = request.POST, activation.plugin, request.user
    back = redirect(reverse("tools:triggers", args=[team.slug, plugin.normalized_name]))
    for action, paused in (("pause", True), ("resume", False)):
        if post.get(action, "").isdigit():
            triggers.trigger_pause(team=team, plugin=plugin, user=user,
                                   trigger_id=int(post[action]), paused=paused)
            messages.success(request, "Paused: deliveries are answered and listed, nothing "
                                      "runs." if paused else "Resumed: deliveries run again.")
            return back
    if post.get("delete", "").isdigit():
        triggers.trigger_delete(team=team, plugin=plugin, user=user,
                                trigger_id=int(post["delete"]))
        messages.success(request, "Trigger deleted: its address no longer works.")
        return back
    if not post.get("secret_for", "").isdigit():
        return None
    trigger_id = int(post["secret_for"])
    shown = triggers.trigger_secret_set(team=team, plugin=plugin, user=user,
                                        trigger_id=trigger_id, secret=post.get("new_secret", ""))
    if not shown:
        messages.success(request, "Secret saved: the old one no longer works.")
        return back
    trigger = Trigger.objects.get(pk=trigger_id)
    return {"trigger": trigger, "url": hook_url(request, trigger), "secret": shown,
            "renewed": True}


def _create(request: AuthenticatedHttpRequest, activation: Activation,
            commands: list[str]) -> tuple[TriggerForm, dict[str, object], int]:
    """The form to show next, what was made (to show once) and the page's status."""
    form = TriggerForm(request.POST, commands=commands)
    if not form.is_valid():
        return form, {}, 400
    data = form.cleaned_data
    try:
        trigger, shown = triggers.trigger_create(
            activation=activation, user=request.user, command=data["command"],
            scheme=data["scheme"], name=data.get("name") or "",
            event_field=data.get("event_field") or "event", fixed=form.fixed_value,
            secret=data.get("secret") or "")
    except triggers.TriggerError as exc:
        form.add_error(None, str(exc))
        return form, {}, 400
    made = {"trigger": trigger, "url": hook_url(request, trigger), "secret": shown}
    return TriggerForm(commands=commands), made, 200
