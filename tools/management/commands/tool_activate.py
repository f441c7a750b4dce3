"""`manage.py tool_activate TEAM PLUGIN VERSION --as ADMIN [--setting NAME=VALUE ...]
[--secret NAME=ENV_VAR ...] [--comment TEXT] [--json]`.

Activates (or upgrades to) a published version for a team as the named admin, as the review
page's "Approve and activate" does (tools/services/activations.py: the request and the
decision, only the team's admins decide, a withdrawn or disabled version is refused, both in the
team's audit log), then saves the settings given through the settings page's service (secrets
sealed; the audit log names the settings changed, never their values). A secret's value is
read from the environment variable named, never from the command line. An address setting
(`kind = "address"`) is given with --setting like the others: the admin approves the host it
names with the activation, as the review page's address fields do (tools/services/addresses.py),
and the output says so. Everything is checked before anything is saved, and saved in one
transaction: an error leaves nothing behind.
Running it again changes nothing (the same version in use, the same values). Settings the
version needs that still have no value are named at the end (JSON: `missing_settings`): calls
are refused until they are entered.
"""

from __future__ import annotations

import json
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.http import Http404

from autocoder.plugins.names import normalize_name
from autocoder.sealing import UnsealError, unseal
from marketplace.models import PluginVersion
from runs.approval_rules import ApprovalRefused
from teams.models import Team
from tools import selectors
from tools.declared import declared_settings
from tools.management._options import team_option, user_option
from tools.services.activations import (
    ActivationError,
    activation_decide,
    activation_request,
    check_may_decide,
)
from tools.services.addresses import address_permissions
from tools.services.invocations import settings_missing_refusal
from tools.services.tool_settings import SettingsError, tool_settings_save


class Command(BaseCommand):
    help = ("Activate (or upgrade to) a published plugin version for a team as one of its "
            "admins, and fill in its settings.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("team", help="slug of the team")
        parser.add_argument("plugin", help="the plugin's name")
        parser.add_argument("version", help="the published version to use, like 1.2.0")
        parser.add_argument("--as", dest="username", required=True, metavar="ADMIN",
                            help="an admin of the team, who approves the activation")
        parser.add_argument("--setting", action="append", default=[], metavar="NAME=VALUE",
                            help="a setting the plugin declares (not a secret); repeatable")
        parser.add_argument("--secret", action="append", default=[], metavar="NAME=ENV_VAR",
                            help="a secret setting, its value read from the environment "
                                 "variable ENV_VAR; repeatable")
        parser.add_argument("--comment", default="", help="recorded with the decision")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        team = team_option(options["team"])
        user = user_option(options["username"])
        try:  # the page's rule, and its words, before anything is asked for
            check_may_decide(team=team, user=user)
        except ApprovalRefused as exc:
            raise CommandError(str(exc)) from None
        try:
            version = selectors.version_for_activation(
                user, team, normalize_name(options["plugin"]), options["version"])
        except Http404:
            raise CommandError(
                f"no published version {options['version']} of {options['plugin']!r} that "
                f"{team.name} can use (its own plugins and public ones)") from None
        values = _values(team, version, options["setting"], options["secret"])
        try:
            with transaction.atomic():
                result = _activate(team, version, user, options["comment"])
                result["settings_changed"] = tool_settings_save(
                    team=team, plugin=version.plugin, version=version, user=user,
                    values=values) if values else []
        except (ActivationError, ApprovalRefused) as exc:
            raise CommandError(f"{exc} Nothing was saved.") from None
        except SettingsError as exc:
            raise CommandError(f"the settings were refused ({exc}); nothing was saved.") from None
        result["addresses"] = _addresses(team, version)
        in_use = selectors.active_activation(team, version.plugin)
        missing = selectors.missing_settings(in_use) if in_use is not None else []
        result["missing_settings"] = [item.name for item in missing]
        self._report(result, version, {d.name for d in declared_settings(version) if d.secret},
                     options["json"])
        if missing and in_use is not None and not options["json"]:
            # the refusal every call would meet, and how to fill them in from here
            self.stdout.write("  still missing, so calls are refused until they are entered: "
                              + str(settings_missing_refusal(in_use, missing)).removeprefix(
                                  "Not run: ")
                              + " (or here: --setting NAME=VALUE, --secret NAME=ENV_VAR)")

    def _report(self, result: dict[str, Any], version: PluginVersion, secret_names: set[str],
                as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(result))
            return
        what = f"{result['plugin']} {result['version']}"
        if not result["activated"]:
            self.stdout.write(f"{result['team']} already uses {what}: nothing to activate.")
        elif result["previous_version"]:
            self.stdout.write(f"{what} is now in use by {result['team']} (upgraded from "
                              f"{result['previous_version']}), approved by {result['by']}.")
        else:
            self.stdout.write(f"{what} is now in use by {result['team']}, approved by "
                              f"{result['by']}.")
        if result["activated"]:
            self.stdout.write(f"  permissions approved: {_permissions_words(version)}")
        for item in result["addresses"]:
            if item["host"]:
                self.stdout.write(f"  address approved: sends data to and reads from "
                                  f"{item['host']} ({item['setting']}), approved by "
                                  f"{item['approved_by'] or 'nobody yet'}")
            else:
                self.stdout.write(f"  address {item['setting']}: none entered yet; give it as "
                                  f"--setting {item['setting']}=https://... to approve it")
        changed = result["settings_changed"]
        if changed:
            self.stdout.write("  settings saved: " + ", ".join(
                f"{name} (secret, stored sealed)" if name in secret_names else name
                for name in changed))
        else:
            self.stdout.write("  settings: nothing changed.")


def _activate(team: Team, version: PluginVersion, user: Any, comment: str) -> dict[str, object]:
    """The review page's "Approve and activate": the request (nobody to notify, its admin
    decides at once) and the decision; nothing when the version is in use already."""
    current = selectors.active_activation(team, version.plugin)
    result: dict[str, object] = {"team": team.name, "plugin": version.plugin.name,
                              "version": version.version, "by": user.get_username(),
                              "activated": False, "previous_version": None, "activation": None}
    if current is not None and current.version_id == version.pk:
        result["activation"] = current.pk
        return result
    asked = activation_request(team=team, version=version, user=user, notify=False)
    decided = activation_decide(activation=asked, user=user, approve=True, comment=comment)
    result.update(activated=True, activation=decided.pk,
                  previous_version=current.version.version if current is not None else None)
    return result


def _addresses(team: Team, version: PluginVersion) -> list[dict[str, object]]:
    """Each address setting's host and who approved it for the activation in force."""
    activation = selectors.active_activation(team, version.plugin)
    values = {name: row.value for name, row in selectors.setting_rows(team, version.plugin).items()
              if not row.secret}
    return [{"setting": item.setting, "host": item.host, "approved_by": item.approved_by,
             "approved_at": item.approved_at.isoformat() if item.approved_at else None}
            for item in address_permissions(activation=activation, version=version,
                                            values=values)]


def _permissions_words(version: PluginVersion) -> str:
    permissions = selectors.manifest_permissions(version)
    return ", ".join(f"{key} = {json.dumps(value)}" for key, value in permissions.items()) \
        or "none declared"


def _pairs(items: list[str], option: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in items:
        name, equals, value = item.partition("=")
        name = name.strip()
        if not equals or not name:
            raise CommandError(f"{option} {item.split('=')[0]!r}: write it as "
                               f"{'NAME=ENV_VAR' if option == '--secret' else 'NAME=VALUE'}.")
        if name in found:
            raise CommandError(f"{option} {name} is given twice.")
        found[name] = value
    return found


def _values(team: Team, version: PluginVersion, settings: list[str],
            secrets: list[str]) -> dict[str, str]:
    """What to hand the settings service: the values given, the secrets read from their
    environment variables (a secret already stored with the same value is left alone), and the
    other settings as they are (the service takes a whole form). Every problem before any."""
    declared = {d.name: d for d in declared_settings(version)}
    plain, from_env = _pairs(settings, "--setting"), _pairs(secrets, "--secret")
    twice = sorted(set(plain) & set(from_env))
    if twice:
        raise CommandError(f"{', '.join(twice)}: given both as --setting and --secret.")
    unknown = sorted(set(plain) - set(declared) | set(from_env) - set(declared))
    if unknown:
        listing = ", ".join(f"{d.name} (secret)" if d.secret else d.name
                            for d in declared.values()) or "none"
        raise CommandError(f"{version.plugin.name} {version.version} declares no setting named "
                           f"{', '.join(unknown)}; the settings it declares: {listing}.")
    for name in plain:
        if declared[name].secret:
            raise CommandError(f"{name} is a secret: give it as --secret {name}=ENV_VAR, the "
                               f"name of an environment variable that holds it, so its value "
                               f"stays off the command line.")
    for name in from_env:
        if not declared[name].secret:
            raise CommandError(f"{name} is not a secret: give it as --setting {name}=VALUE.")
    missing = [f"{variable or '(none named)'} (for {name})" for name, variable in from_env.items()
               if not variable.strip() or not os.environ.get(variable.strip())]
    if missing:
        raise CommandError("these environment variables are not set or are empty: "
                           f"{', '.join(missing)}; nothing was saved.")
    if not plain and not from_env:
        return {}
    rows = selectors.setting_rows(team, version.plugin)
    values = {name: row.value for name, row in rows.items()
              if name in declared and not declared[name].secret}
    values.update(plain)
    for name, variable in from_env.items():
        value = os.environ[variable.strip()]
        if not _stored_secret_is(rows.get(name), value):
            values[name] = value
    return values


def _stored_secret_is(row: Any, value: str) -> bool:
    if row is None or not row.secret:
        return False
    try:
        return unseal(row.value) == value
    except UnsealError:
        return False
