"""Address settings: the hosts a team admin enters and approves at activation (docs/safety.md,
"Hosts a version may reach").

A version reaches the hosts its plugin.toml declares (`[permissions] hosts`), approved with the
version at the gates and when a team activates it, and the host of each of its address settings
(`kind = "address"`) that a team admin approved for the activation: when they approve the
activation with the address entered, or when they enter or change it later on the settings page.
Each approval is an `ApprovedAddress` row of the activation (who, when) and an audit entry
("tool.address_approved"). At call time api.http may reach an address setting's host only while
the setting still names a host approved for the activation in force.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import User
from django.utils import timezone

from autocoder.calling.http_addresses import internal_set
from autocoder.plugins import HostError, HostRule, SettingDecl, address_rule, address_url
from marketplace.models import PluginVersion
from teams.services.audit import audit_record
from tools.declared import declared_settings
from tools.models import Activation, ApprovedAddress, ToolSetting

NOT_ENTERED = ("{name} has no address yet: a team admin enters it on the tool's Settings page "
               "(or when activating it) and so approves it.")
NOT_APPROVED = ("the address entered for {name} ({host}) is not approved for the version in use: "
                "a team admin saves it again on the tool's Settings page to approve it.")


@dataclass(frozen=True)
class AddressPermission:
    """One address setting as a decider sees it: "sends data to bookings.example.org"."""

    setting: str
    description: str
    host: str  # "" while no address is entered
    approved_by: str = ""  # a username; "" while not approved for this activation
    approved_at: datetime | None = None


def address_settings(version: PluginVersion) -> list[SettingDecl]:
    return [item for item in declared_settings(version) if item.is_address]


def address_problem(value: str) -> str:
    """Why `value` cannot be an address setting's value, in words ("" when it can)."""
    try:
        rule = address_rule(value)
    except HostError as exc:
        return f"This is not a web address the tool can reach: it {exc}."
    if rule.is_ip and rule.host not in internal_set(settings.TOOLS_INTERNAL_HOSTS):
        return (f"{rule.host} is an IP address: the portal reaches one only when a site admin "
                "lists it in TOOLS_INTERNAL_HOSTS. Enter the service's host name instead.")
    return ""


def address_values_check(version: PluginVersion,
                         values: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The address settings among `values`, each as the URL the plugin gets
    (`bookings.example.org` -> `https://bookings.example.org`), and the problem of each value
    that is no address ({} when none). An empty value stays empty (not entered)."""
    cleaned: dict[str, str] = {}
    problems: dict[str, str] = {}
    for item in address_settings(version):
        if item.name not in values:
            continue
        value = str(values[item.name]).strip()
        problem = address_problem(value) if value else ""
        if problem:
            problems[item.name] = problem
        else:
            cleaned[item.name] = address_url(value) if value else ""
    return cleaned, problems


def addresses_approve(*, activation: Activation, user: User, values: Mapping[str, str],
                      names: Iterable[str] | None = None) -> list[str]:
    """Record that `user` (a team admin, checked by the caller) approves the hosts the address
    settings `names` (all of them: None) name in `values`, for `activation`. Returns the hosts
    newly approved; each is an audit entry."""
    wanted = set(names) if names is not None else None
    approved = []
    now = timezone.now()
    for item in address_settings(activation.version):
        value = str(values.get(item.name) or "").strip()
        if not value or (wanted is not None and item.name not in wanted):
            continue
        try:
            host = address_rule(value).text()
        except HostError:
            continue  # refused when it was saved; nothing to approve
        _, created = ApprovedAddress.objects.get_or_create(
            activation=activation, setting=item.name, host=host,
            defaults={"approved_by": user, "approved_at": now})
        if created:
            approved.append(host)
            audit_record(actor=user, action="tool.address_approved", team=activation.team,
                         target=activation, after={"setting": item.name, "host": host,
                                                   "plugin": activation.plugin.name,
                                                   "version": activation.version.version})
    return approved


def addresses_approve_entered(*, activation: Activation, user: User) -> list[str]:
    """Approving an activation approves the addresses its address settings hold already (an
    upgrade keeps the team's settings; the review page showed them as permissions)."""
    names = [item.name for item in address_settings(activation.version)]
    if not names:
        return []
    values = dict(ToolSetting.objects.filter(team_id=activation.team_id,
                                             plugin_id=activation.plugin_id,
                                             name__in=names).values_list("name", "value"))
    return addresses_approve(activation=activation, user=user, values=values)


def address_permissions(*, activation: Activation | None, version: PluginVersion,
                        values: Mapping[str, str]) -> list[AddressPermission]:
    """Each address setting of `version`: the host its value names now and, for `activation`,
    who approved that host and when."""
    rows = {(row.setting, row.host): row for row in ApprovedAddress.objects.filter(
        activation=activation).select_related("approved_by")} if activation is not None else {}
    found = []
    for item in address_settings(version):
        host = _host_of(values.get(item.name, ""))
        row = rows.get((item.name, host))
        found.append(AddressPermission(
            setting=item.name, description=item.description, host=host,
            approved_by=row.approved_by.get_username() if row and row.approved_by else
            ("someone who left" if row else ""), approved_at=row.approved_at if row else None))
    return found


def approved_hosts_for_call(*, team_id: int, plugin_id: int, version: PluginVersion,
                            values: Mapping[str, str]) -> tuple[tuple[HostRule, ...], str]:
    """The address settings' hosts api.http may reach in a call of `version` by the team (its
    activation in force approved them, and the settings still name them), and a sentence about
    those it may not reach yet ("" when there is none)."""
    items = address_settings(version)
    if not items:
        return (), ""
    activation = Activation.objects.filter(team_id=team_id, plugin_id=plugin_id,
                                           version_id=version.pk,
                                           status=Activation.Status.ACTIVE).first()
    approved = set(ApprovedAddress.objects.filter(activation=activation).values_list(
        "setting", "host")) if activation is not None else set()
    rules: list[HostRule] = []
    notes: list[str] = []
    for item in items:
        value = str(values.get(item.name) or "").strip()
        if not value:
            notes.append(NOT_ENTERED.format(name=item.name))
            continue
        try:
            rule = address_rule(value)
        except HostError:
            notes.append(NOT_ENTERED.format(name=item.name))
            continue
        if (item.name, rule.text()) in approved:
            rules.append(rule)
        else:
            notes.append(NOT_APPROVED.format(name=item.name, host=rule.text()))
    return tuple(rules), " ".join(notes)


def _host_of(value: str) -> str:
    try:
        return address_rule(value).text() if str(value).strip() else ""
    except HostError:
        return ""
