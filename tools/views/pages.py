"""Pages of the tools app: thin; access through teams/permissions.py (404 for outsiders),
decisions through the services (which ask runs/approval_rules.py who may decide)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from autocoder.calling.invoke import INVOKE_LIMITS
from marketplace.install_commands import TOKEN_PLACEHOLDER
from marketplace.models import PluginVersion
from marketplace.selectors.network import network_summary
from projects.diffs import unified_rows
from runs.approval_rules import activation_deciders, activation_refusal
from teams.http import AuthenticatedHttpRequest
from teams.models import Membership, Team
from teams.permissions import get_team_for_member
from tools import selectors
from tools.api_commands import api_example, curl_command, example_known
from tools.change_selectors import plugin_change_requests
from tools.declared import command_info, command_names, declared_hosts, declared_settings
from tools.forms import CommandForm, input_specs, output_blocks, output_csv, prefill
from tools.mcp import client_config
from tools.models import Activation, Invocation
from tools.schedule_selectors import schedule_offer
from tools.services import activations, blocks, tokens, tool_settings
from tools.services.address_approval import AddressesRefused, activation_approve
from tools.services.addresses import AddressPermission, address_permissions
from tools.services.invocations import InvocationRefused, invocation_request
from tools.views.schedule_parts import schedule_post, schedule_section


def _tool(request: AuthenticatedHttpRequest, slug: str,
          name: str) -> tuple[Team, Membership, Activation]:
    team, membership = get_team_for_member(request.user, slug)
    return team, membership, selectors.tool_for_member(team, name)


def _may_decide(membership: Membership, team: Team) -> bool:
    return not activation_refusal(membership=membership, team=team)


# -- the team's tools and activations ------------------------------------------------------------


@login_required
def tool_list(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    team, membership = get_team_for_member(request.user, slug)
    return render(request, "tools/tool_list.html", {
        "team": team, "tools": selectors.team_tools(team),
        "pending": selectors.pending_activations(team),
        "available": selectors.activatable_versions(team, request.user),
        "may_decide": _may_decide(membership, team)})


def _review_context(team: Team, version: PluginVersion, previous: Activation | None,
                    addresses: list[AddressPermission]) -> dict[str, object]:
    """What a decider sees: permissions, reports, settings, limits, and what changes."""
    before = previous.version if previous is not None else None
    hosts = declared_hosts(version)
    return {
        "version": version, "plugin": version.plugin,
        "permissions": selectors.manifest_permissions(version),
        # the marketplace page's words, each address with what the team entered
        "network": network_summary(version, entered={item.setting: item for item in addresses}),
        "hosts_added": [host for host in hosts if before and host not in declared_hosts(before)],
        "settings_declared": declared_settings(version),
        "limits": INVOKE_LIMITS.described(),
        "before": before,
        "permissions_before": selectors.manifest_permissions(before) if before else None,
        "diff": unified_rows(before.files, version.files) if before else None,
        "withdrawn": activations.yanked_refusal(version) if version.yanked else "",
        "schedule_offer": schedule_offer(version),
    }


@login_required
@require_http_methods(["GET", "POST"])
def activation_new(request: AuthenticatedHttpRequest, slug: str, name: str,
                   version: str) -> HttpResponse:
    """Ask for (any member) or, for an admin, decide at once the activation of a version."""
    team, membership = get_team_for_member(request.user, slug)
    found = selectors.version_for_activation(request.user, team, name, version)
    if request.method == "POST":
        deciding = request.POST.get("decision") in ("approve", "refuse") and _may_decide(
            membership, team)
        try:
            activation = activations.activation_request(team=team, version=found,
                                                        user=request.user, notify=not deciding)
            if deciding:
                return _decide(request, activation)
        except activations.ActivationError as exc:
            messages.error(request, str(exc))
            return redirect("tools:list", team.slug)
        messages.success(request, "Asked. The team's admins have been told.")
        return redirect("tools:activation", team.slug, activation.pk)
    return _review_page(request, team, membership, None, found)


@login_required
@require_http_methods(["GET", "POST"])
def activation_detail(request: AuthenticatedHttpRequest, slug: str, pk: int) -> HttpResponse:
    team, membership = get_team_for_member(request.user, slug)
    activation = selectors.activation_for_member(team, pk)
    if request.method == "POST":
        return _decide(request, activation)
    return _review_page(request, team, membership, activation, activation.version)


def _review_page(request: AuthenticatedHttpRequest, team: Team, membership: Membership,
                 activation: Activation | None, version: PluginVersion, *,
                 typed: dict[str, str] | None = None, errors: dict[str, str] | None = None,
                 comment: str = "") -> HttpResponse:
    """The review page; with the addresses as typed and their problems when they were refused."""
    decided = activation is not None and activation.status != Activation.Status.PENDING
    previous = activation.previous if decided and activation is not None else \
        selectors.active_activation(team, version.plugin)
    values = {name: row.value for name, row in selectors.setting_rows(team, version.plugin).items()
              if not row.secret}
    addresses = address_permissions(activation=activation, version=version, values=values)
    return render(request, "tools/activation.html", {
        "team": team, "activation": activation, "may_decide": _may_decide(membership, team),
        "addresses": [{"permission": item, "value": (typed or values).get(item.setting, ""),
                       "error": (errors or {}).get(item.setting, "")} for item in addresses],
        "comment": comment, **_review_context(team, version, previous, addresses)},
        status=400 if errors else 200)


def _decide(request: AuthenticatedHttpRequest, activation: Activation) -> HttpResponse:
    approve = request.POST.get("decision") == "approve"
    comment = request.POST.get("comment", "")
    typed = {key.removeprefix("address-"): str(value) for key, value in request.POST.items()
             if key.startswith("address-")}
    try:
        if approve:
            activation_approve(activation=activation, user=request.user, comment=comment,
                               addresses=typed)
        else:
            activations.activation_decide(activation=activation, user=request.user,
                                          approve=False, comment=comment)
    except AddressesRefused as refused:
        membership = Membership.objects.get(team=activation.team, user=request.user)
        return _review_page(request, activation.team, membership, activation,
                            activation.version, typed=typed, errors=refused.errors,
                            comment=comment)
    except activations.ActivationError as exc:
        messages.error(request, str(exc))
        return redirect("tools:activation", activation.team.slug, activation.pk)
    if approve:
        missing = selectors.missing_settings(activation)
        needs = (f" It needs {len(missing)} setting{'s' if len(missing) > 1 else ''} before "
                 "it can run: they are listed below, with where to enter them." if missing
                 else "")
        messages.success(request, f"{activation.plugin.name} {activation.version.version} is "
                                  f"now in use by the team.{needs}")
        _schedule_offered(request, activation)
        return redirect("tools:detail", activation.team.slug, activation.plugin.normalized_name)
    messages.success(request, "Refused. Whoever asked has been told.")
    return redirect("tools:list", activation.team.slug)


def _schedule_offered(request: AuthenticatedHttpRequest, activation: Activation) -> None:
    offer = schedule_offer(activation.version)
    if offer is not None:
        messages.info(request, f"The request asked for it to run “{offer.words or offer.when}”: "
                               "the schedule is filled in for you under Schedules below; check "
                               "it and save it.")


@login_required
@require_POST
def tool_rollback(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, _, activation = _tool(request, slug, name)
    try:
        back = activations.activation_rollback(team=team, plugin=activation.plugin,
                                               user=request.user)
        messages.success(request, f"Back to version {back.version.version}.")
    except activations.ActivationError as exc:
        messages.error(request, str(exc))
    return redirect("tools:detail", team.slug, name)


@login_required
@require_POST
def tool_deactivate(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, _, activation = _tool(request, slug, name)
    activations.activation_retire(team=team, plugin=activation.plugin, user=request.user)
    messages.success(request, f"{activation.plugin.name} is no longer in use by the team.")
    return redirect("tools:list", team.slug)


# -- using a tool --------------------------------------------------------------------------------


def _forms(activation: Activation, bound: tuple[str, CommandForm] | None = None,
           again: Invocation | None = None) -> list[dict[str, object]]:
    """Each command's form; `again`: an earlier call of the user's, whose input its command's
    form starts from ("Run it again")."""
    found = []
    for command in command_names(activation.version):
        specs = input_specs(activation.version, command)
        initial = prefill(specs, again.payload) if again and again.command == command else {}
        form = bound[1] if bound and bound[0] == command else CommandForm(
            specs=specs, prefix=command, initial=initial)
        info = command_info(activation.version, command) or {}
        # The rows are listed here: in a template, `form.rows` would be a field named rows.
        found.append({"name": command, "description": info.get("description", ""),
                      "form": form, "rows": form.rows(), "again": bool(initial)})
    return found


def _detail_context(request: AuthenticatedHttpRequest, team: Team, membership: Membership,
                    activation: Activation, schedule_form: Any = None) -> dict[str, object]:
    command, sample = api_example(activation.version)
    return {
        "team": team, "activation": activation, "plugin": activation.plugin,
        "version": activation.version, "may_decide": _may_decide(membership, team),
        "commands": _forms(activation),
        "recent": selectors.recent_results(team, activation.plugin, request.user.pk),
        "curl_command": _curl(request, activation, command, sample),
        "api_input_known": example_known(activation.version, command),
        "api_command": command, "api_sample": json.dumps(sample),
        "limits": INVOKE_LIMITS.described(),
        "blocked": selectors.version_block(activation.version_id),
        **schedule_section(team, membership, activation, schedule_form),
        "history": selectors.activation_history(team, activation.plugin)[:10],
        "storage": selectors.storage_of(team, activation.plugin),
        "storage_kb": INVOKE_LIMITS.storage_kb,
        "change_requests": list(plugin_change_requests(team, activation.plugin)[:10]),
        **_missing_context(team, activation),
        **_mcp_context(request, team),
    }


def _mcp_context(request: AuthenticatedHttpRequest, team: Team,
                 token: str = "") -> dict[str, object]:
    """The team's MCP address and a desktop assistant's configuration (with `token`, a new
    token of all the team's tools, shown once)."""
    url = client_config.mcp_url(request.build_absolute_uri("/"), team.slug)
    config = client_config.desktop_config(url=url, team_slug=team.slug,
                                          **({"token": token} if token else {}))
    return {"mcp_url": url, "mcp_config": config, "mcp_token_shown": bool(token)}


def _missing_context(team: Team, activation: Activation) -> dict[str, object]:
    """The settings still missing (calls are refused until they are entered), where an admin
    enters them, and who may (for a member who cannot)."""
    missing = selectors.missing_settings(activation)
    return {"missing_settings": missing, "settings_url": selectors.settings_page(activation),
            "setting_admins": [u.get_username() for u in activation_deciders(team=team)]
            if missing else []}


@login_required
def tool_detail(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, membership, activation = _tool(request, slug, name)
    context = _detail_context(request, team, membership, activation)
    again = request.GET.get("again", "")
    if again.isdigit():  # "Run it again" on one of the user's results
        earlier = selectors.result_for_member(team, activation.plugin, int(again),
                                              request.user.pk)
        context["commands"] = _forms(activation, again=earlier)
    return render(request, "tools/tool_detail.html", context)


@login_required
@require_POST
def tool_run(request: AuthenticatedHttpRequest, slug: str, name: str,
             command: str) -> HttpResponse:
    team, membership, activation = _tool(request, slug, name)
    if command not in command_names(activation.version):
        raise Http404("No such command")
    form = CommandForm(request.POST, request.FILES,
                       specs=input_specs(activation.version, command), prefix=command)
    refusal, refusal_url = "", ""
    if form.is_valid():
        try:
            invocation = invocation_request(activation=activation, user_id=request.user.pk,
                                            command=command, payload=form.payload())
            return redirect("tools:result", team.slug, name, invocation.pk)
        except InvocationRefused as exc:
            refusal, refusal_url = str(exc), exc.url
    context = _detail_context(request, team, membership, activation)
    context.update(commands=_forms(activation, (command, form)), refusal=refusal,
                   refusal_url=refusal_url, refused_command=command)
    return render(request, "tools/tool_detail.html", context, status=400)


@login_required
def tool_result(request: AuthenticatedHttpRequest, slug: str, name: str,
                pk: int) -> HttpResponse:
    """One of the user's results; while it waits the page asks again (htmx every second,
    without JavaScript a refresh every two seconds)."""
    team, _, activation = _tool(request, slug, name)
    invocation = selectors.result_for_member(team, activation.plugin, pk, request.user.pk)
    output = invocation.output_in_order
    context = {"team": team, "activation": activation, "plugin": activation.plugin,
               "invocation": invocation, "blocks": output_blocks(output)
               if invocation.status == Invocation.Status.OK else [],
               "has_csv": output_csv(output) is not None,
               "is_text": isinstance(output, str),
               "done": invocation.status not in (Invocation.Status.PENDING,
                                                 Invocation.Status.RUNNING)}
    template = "tools/result.html#result" if request.htmx else "tools/result.html"
    return render(request, template, context)


@login_required
def tool_result_download(request: AuthenticatedHttpRequest, slug: str, name: str, pk: int,
                         fmt: str) -> HttpResponse:
    team, _, activation = _tool(request, slug, name)
    invocation = selectors.result_for_member(team, activation.plugin, pk, request.user.pk)
    if invocation.status != Invocation.Status.OK:
        raise Http404("No output")
    stem = f"{activation.plugin.normalized_name}-{invocation.command}-{invocation.pk}"
    output = invocation.output_in_order
    if fmt == "csv":
        text = output_csv(output)
        if text is None:
            raise Http404("Not a table")
        response = HttpResponse(text, content_type="text/csv; charset=utf-8")
    elif fmt == "txt" and isinstance(output, str):
        response = HttpResponse(output, content_type="text/plain; charset=utf-8")
    elif fmt == "json":
        response = HttpResponse(json.dumps(output, indent=2, ensure_ascii=False),
                                content_type="application/json")
    else:
        raise Http404("No such format")
    response["Content-Disposition"] = f'attachment; filename="{stem}.{fmt}"'
    return response


@login_required
def tool_log(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, _, activation = _tool(request, slug, name)
    from django.conf import settings

    return render(request, "tools/log.html", {
        "team": team, "activation": activation, "plugin": activation.plugin,
        "entries": selectors.invocation_log(team, activation.plugin),
        "retention_days": settings.TOOLS_LOG_RETENTION_DAYS,
        "failed": request.GET.get("failed", "")})


# -- settings, tokens, schedules (admins; schedules: reviewers too) ------------------------------


def _curl(request: AuthenticatedHttpRequest, activation: Activation, command: str,
          payload: dict[str, object], token: str = TOKEN_PLACEHOLDER) -> str:
    """The API example, at the address this page was asked for."""
    url = request.build_absolute_uri(reverse("tools:api", args=[
        activation.team.slug, activation.plugin.normalized_name, command]))
    return curl_command(url=url, payload=payload, token=token)


@login_required
@require_http_methods(["GET", "POST"])
def tool_settings_page(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, membership, activation = _tool(request, slug, name)
    if not _may_decide(membership, team):
        raise PermissionDenied("Only team admins change a tool's settings.")
    if request.method == "POST":
        values = {key: str(value) for key, value in request.POST.items()
                  if key != "csrfmiddlewaretoken"}
        unapproved = {view.name for view in _setting_views(team, activation)
                      if view.address and not view.approved_by}
        try:
            changed = tool_settings.tool_settings_save(
                team=team, plugin=activation.plugin, version=activation.version,
                user=request.user, values=values)
            messages.success(request, _saved_words(team, activation, changed, unapproved))
            return redirect("tools:settings", team.slug, name)
        except tool_settings.SettingsError as exc:
            messages.error(request, str(exc))
    views = _setting_views(team, activation)
    return render(request, "tools/settings.html", {
        "team": team, "activation": activation, "plugin": activation.plugin,
        "settings": views, "has_secrets": any(view.secret for view in views),
        "missing_count": sum(1 for view in views if view.required and not view.is_set)})


def _setting_views(team: Team, activation: Activation) -> list[selectors.SettingView]:
    return tool_settings.setting_views(team=team, plugin=activation.plugin,
                                       version=activation.version)


def _saved_words(team: Team, activation: Activation, changed: list[str],
                 unapproved: set[str]) -> str:
    """"Saved (booking_address); approved: sends data to bookings.example.org." Saving an
    address approves it (docs/safety.md, "Hosts a version may reach"), also one saved again
    unchanged: the page says which (`unapproved`: the addresses not approved before)."""
    approved = [view.host for view in _setting_views(team, activation)
                if view.address and view.host and view.approved_by
                and (view.name in changed or view.name in unapproved)]
    said = f"Saved ({', '.join(changed)})" if changed else "Saved" if approved else \
        "Nothing changed"
    return said + (f"; approved: sends data to {', '.join(approved)}." if approved else ".")


@login_required
@require_http_methods(["GET", "POST"])
def tool_tokens(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, membership, activation = _tool(request, slug, name)
    if not _may_decide(membership, team):
        raise PermissionDenied("Only team admins manage a tool's API tokens.")
    raw, team_wide = "", False
    if request.method == "POST":
        try:
            if request.POST.get("revoke"):
                tokens.tool_token_revoke(team=team, plugin=activation.plugin, user=request.user,
                                         token_id=int(request.POST["revoke"]))
                messages.success(request, "Revoked: it no longer works.")
                return redirect("tools:tokens", team.slug, name)
            team_wide = request.POST.get("covers") == "team"
            _, raw = tokens.tool_token_create(team=team, plugin=None if team_wide
                                              else activation.plugin, user=request.user,
                                              name=request.POST.get("name", ""))
        except (activations.ActivationError, ValueError) as exc:
            messages.error(request, str(exc))
    command, sample = api_example(activation.version)
    return render(request, "tools/tokens.html", {
        "team": team, "activation": activation, "plugin": activation.plugin, "raw": raw,
        "tokens": selectors.tokens_of(team, activation.plugin), "may_decide": True,
        "curl_command": _curl(request, activation, command, sample, raw) if raw else "",
        **_mcp_context(request, team, raw if raw and team_wide else "")})


@login_required
@require_POST
def tool_schedules(request: AuthenticatedHttpRequest, slug: str, name: str) -> HttpResponse:
    team, membership, activation = _tool(request, slug, name)
    form = schedule_post(request, team, activation)
    if form is None:
        return redirect(reverse("tools:detail", args=[team.slug, name]) + "#schedules")
    context = _detail_context(request, team, membership, activation, schedule_form=form)
    return render(request, "tools/tool_detail.html", context, status=400)


# -- the kill switch (site admins) ---------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def kill_switch(request: AuthenticatedHttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("Only site administrators use the kill switch.")
    if request.method == "POST":
        version = (PluginVersion.objects.select_related("plugin")
                   .filter(plugin__normalized_name=request.POST.get("plugin", "").strip().lower(),
                           version=request.POST.get("version", "").strip()).first())
        try:
            if version is None:
                raise blocks.BlockError("No such plugin version.")
            if request.POST.get("enable"):
                blocks.version_unblock(version=version, user=request.user)
                messages.success(request, f"{version} can be used again.")
            else:
                blocks.version_block(version=version, user=request.user,
                                     reason=request.POST.get("reason", ""))
                messages.success(request, f"{version} is disabled everywhere.")
        except blocks.BlockError as exc:
            # The form again with what was typed, so a refused reason is not lost.
            return render(request, "tools/kill_switch.html", {
                "blocked": selectors.blocked_versions(), "error": str(exc),
                "asked_plugin": request.POST.get("plugin", ""),
                "asked_version": request.POST.get("version", ""),
                "asked_reason": request.POST.get("reason", ""),
                "max_reason": blocks.MAX_REASON_CHARS}, status=400)
        return redirect("tools:kill_switch")
    return render(request, "tools/kill_switch.html", {
        "blocked": selectors.blocked_versions(),
        "asked_plugin": request.GET.get("plugin", ""),
        "asked_version": request.GET.get("version", ""),
        "max_reason": blocks.MAX_REASON_CHARS})
