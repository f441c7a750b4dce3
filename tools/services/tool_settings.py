"""Settings a plugin declares in plugin.toml (`[[settings]] name, description, secret`),
entered by a team admin. Secrets are sealed like the teams' LLM keys (autocoder/sealing.py)
and never shown again: the page says "set" and offers to replace them."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from autocoder.sealing import seal, unseal
from marketplace.models import Plugin, PluginVersion
from marketplace.services.trying import TrySettings
from teams.models import Membership, Team
from teams.services.audit import audit_record
from tools.declared import declared_settings
from tools.models import Activation, ToolSetting, VersionBlock
from tools.selectors import EnteredSetting, SettingView, setting_rows, settings_page
from tools.services.activations import check_may_decide
from tools.services.addresses import (
    address_permissions,
    address_values_check,
    addresses_approve_entered,
    approved_hosts_for_call,
)
from tools.services.events import tool_event_queue

MAX_SETTING_CHARS = 4000


class SettingsError(Exception):
    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))


def setting_views(*, team: Team, plugin: Plugin, version: PluginVersion) -> list[SettingView]:
    """The declared settings of `version` with what the team entered (secrets: set or not),
    and for an address setting its host and who approved it for the activation in use."""
    rows = setting_rows(team, plugin)
    in_use = Activation.objects.filter(team=team, plugin=plugin, version=version,
                                       status=Activation.Status.ACTIVE).first()
    addresses = {item.setting: item for item in address_permissions(
        activation=in_use, version=version,
        values={name: row.value for name, row in rows.items() if not row.secret})}
    views = []
    for declared in declared_settings(version):
        row = rows.get(declared.name)
        address = addresses.get(declared.name)
        views.append(SettingView(
            name=declared.name, description=declared.description, secret=declared.secret,
            is_set=bool(row and row.value),
            value="" if declared.secret or row is None else row.value,
            required=declared.required, address=address is not None,
            host=address.host if address else "",
            approved_by=address.approved_by if address else ""))
    return views


def tool_settings_save(*, team: Team, plugin: Plugin, version: PluginVersion, user: User,
                       values: dict[str, str]) -> list[str]:
    """Save what an admin entered; an empty secret keeps the stored one (it is never sent
    back to the page), `clear` in `values` as `<name>:clear` removes it. Returns the names
    changed (the audit entry names them, never their values)."""
    check_may_decide(team=team, user=user)
    declared = {d.name: d for d in declared_settings(version)}
    too_long = {name: f"at most {MAX_SETTING_CHARS} characters"
                for name, value in values.items() if len(value) > MAX_SETTING_CHARS}
    if too_long:
        raise SettingsError(too_long)
    # An address setting's value must be an address; it is kept as the URL the plugin gets.
    addresses, not_addresses = address_values_check(version, values)
    if not_addresses:
        raise SettingsError(not_addresses)
    values = {**values, **addresses}
    rows = setting_rows(team, plugin)
    changed = []
    with transaction.atomic():
        for name, item in declared.items():
            new = values.get(name, "")
            if item.secret and not new and not values.get(f"{name}:clear"):
                continue  # left empty: keep the secret as it is
            row = rows.get(name)
            if not item.secret and (row.value if row is not None else "") == new:
                continue  # unchanged, or left empty and never set
            stored = seal(new) if item.secret else new
            ToolSetting.objects.update_or_create(
                team=team, plugin=plugin, name=name,
                defaults={"value": stored, "secret": item.secret, "updated_by": user})
            changed.append(name)
        if changed:
            audit_record(actor=user, action="tool.settings_changed", team=team, target=plugin,
                         after={"settings": changed})
            tool_event_queue(team_id=team.pk, version=version, event="settings_changed",
                             data={"names": changed})
        _addresses_approve(team, plugin, version, user)
    return changed


def _addresses_approve(team: Team, plugin: Plugin, version: PluginVersion, user: User) -> None:
    """An admin who saves the settings approves the hosts its addresses name for the version in
    use, as the page says (docs/safety.md, "Hosts a version may reach")."""
    in_use = Activation.objects.filter(team=team, plugin=plugin, version=version,
                                       status=Activation.Status.ACTIVE).first()
    if in_use is not None:
        addresses_approve_entered(activation=in_use, user=user)


def settings_for_call(*, team: Team | int, plugin: Plugin | int, version: PluginVersion,
                      entered: list[EnteredSetting] | None = None
                      ) -> tuple[dict[str, str], list[str]]:
    """The values the plugin gets as `api.settings` (secrets unsealed, only declared names),
    and the names of the secret ones, whose values the runtime blanks from the outcome.
    `entered`: the team's rows as read with the tool (tools.selectors.tool_for_call), else
    they are read now."""
    declared = {d.name: d for d in declared_settings(version)}
    if entered is None:
        entered = [{"name": row.name, "value": row.value, "secret": row.secret}
                   for row in ToolSetting.objects.filter(team=team, plugin=plugin,
                                                         name__in=list(declared))]
    values: dict[str, str] = {}
    for row in entered:
        if row["name"] in declared:
            values[row["name"]] = unseal(row["value"]) if row["secret"] else row["value"]
    return values, [name for name, item in declared.items() if item.secret]


def try_settings_of(*, user_id: int, team_id: int, version: PluginVersion) -> TrySettings | None:
    """The marketplace's "Try it" hook (autocoder/hooks.py "try_settings"): the settings a tool
    call of `team_id` would get, with the hosts of the address settings its admin approved, if
    the user is still a member and the team uses this very version (another version in use:
    only its number, the values stay with the version the team reviewed, whose hosts it
    approved). None: the team does not use the plugin, or the version is disabled."""
    if not Membership.objects.filter(team_id=team_id, user_id=user_id).exists():
        return None
    in_use = Activation.objects.filter(team_id=team_id, plugin_id=version.plugin_id,
                                       status=Activation.Status.ACTIVE).select_related(
                                           "version", "team", "plugin").first()
    if in_use is None or VersionBlock.objects.filter(version_id=version.pk).exists():
        return None
    team = in_use.team
    if in_use.version_id != version.pk:
        return TrySettings(values={}, secret_names=(), other_version=in_use.version.version,
                           team_name=team.name)
    values, secret_names = settings_for_call(team=team_id, plugin=version.plugin_id,
                                             version=version)
    # A real send reaches the addresses the team's admin approved, as a call does.
    approved, note = approved_hosts_for_call(team_id=team_id, plugin_id=version.plugin_id,
                                             version=version, values=values)
    return TrySettings(values=values, secret_names=tuple(secret_names), team_name=team.name,
                       settings_url=settings_page(in_use), approved=approved,
                       address_note=note)
