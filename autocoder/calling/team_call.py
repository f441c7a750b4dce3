"""Call this version as this team: the one road every caller takes (the tools' form, API and
schedules, the marketplace's "Try it", the triggers to come).

A caller knows the version (its reviewed files and their `PluginManifest`), the command and its
payload, and what the team gives the plugin (`TeamSettings`: its settings, secrets unsealed,
where an admin enters a missing one, the addresses its admin approved). `call_as_team` builds
the host's side of `api.http` from those and the site's internal hosts, runs the call in the
sandbox (invoke.py) and returns its `CallOutcome`. The policies are its parameters, decided
here and nowhere else:

- the hosts: only those the reviewed plugin.toml declares, and the team's approved addresses;
  a version that declares neither gets no gate at all (its `api.http` says it declared none);
- a secret: its value stays on the host and is filled in on a request to a reachable host;
  every declared secret is known to the gate, "" for one the team has not entered yet, so a
  request that needs it is refused with the words of a refused call and the team's page
  (setting_words.py);
- sending: for real (`rehearsal=None`), or a rehearsal (`Rehearsal`: every rule, nothing sent,
  a secret's place shows `[secret NAME]`, the answers are the examples' samples).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autocoder.calling.http_gate import HttpGate, HttpPolicy
from autocoder.calling.http_rehearsal import (
    HttpRehearsal,
    sample_answers,
    sample_settings,
    secret_placeholder,
)
from autocoder.calling.invoke import (
    INVOKE_LIMITS,
    CallOutcome,
    InvokeLimits,
    PluginCall,
    call_plugin,
)
from autocoder.plugins import HostError, HostRule, PluginManifest, address_rule, address_url
from autocoder.sandbox.warm import WarmKey

REHEARSAL_NO_ADDRESS = ("{name} has no value in the plugin's examples, so a rehearsal has no"
                        " address for it.")


@dataclass(frozen=True)
class TeamSettings:
    """What a team gives one call: its settings' values (secrets unsealed: they go to the host's
    gate, never into the sandbox), the names of the secret ones, the (site-relative) page where
    its admin enters a missing one, the hosts of the address settings its admin approved, and
    what a refusal adds about those not approved yet."""

    values: Mapping[str, str] = field(default_factory=dict)
    secret_names: tuple[str, ...] = ()
    settings_url: str = ""
    approved: tuple[HostRule, ...] = ()
    address_note: str = ""


@dataclass(frozen=True)
class Rehearsal:
    """Send nothing: answer each request from these sample answers (a version's examples,
    http_rehearsal.sample_answers)."""

    answers: Sequence[Mapping[str, Any]] = ()


def rehearsal_of(*, manifest: PluginManifest, commands: Sequence[Any],
                 command: str) -> tuple[TeamSettings, Rehearsal]:
    """What a rehearsal of `command` gives the plugin, from the version's examples
    (`PluginVersion.commands`): their settings (never a secret's), and an address setting's
    example value, as the URL a call's plugin gets, lets it reach that host (nothing is sent
    there either: the sample answers reply)."""
    values = sample_settings(commands, command)
    reached: list[HostRule] = []
    notes: list[str] = []
    for item in manifest.address_settings:
        try:
            rule = address_rule(values.get(item.name, ""))
        except HostError:
            notes.append(REHEARSAL_NO_ADDRESS.format(name=item.name))
            values.pop(item.name, None)
            continue
        reached.append(rule)
        values[item.name] = address_url(values[item.name])
    team = TeamSettings(values=values, approved=tuple(reached), address_note=" ".join(notes))
    return team, Rehearsal(answers=tuple(sample_answers(commands, command)))


def http_for_call(*, manifest: PluginManifest | None, team: TeamSettings,
                  internal_hosts: Collection[str],
                  rehearsal: Rehearsal | None = None) -> HttpGate | None:
    """The host's side of one call's `api.http` (None: the version declares no host and no
    address setting, so there is nothing it may reach)."""
    if manifest is None or not (manifest.hosts or manifest.address_settings):
        return None
    if rehearsal is not None:
        secrets = {item.name: secret_placeholder(item.name)
                   for item in manifest.settings if item.secret}
    else:
        secrets = {name: team.values.get(name) or "" for name in team.secret_names}
    policy = HttpPolicy(hosts=tuple(manifest.hosts), internal_hosts=frozenset(internal_hosts),
                        approved=team.approved, address_note=team.address_note,
                        secrets=secrets, settings_url=team.settings_url,
                        described={item.name: item.description for item in manifest.settings})
    if rehearsal is not None:
        return HttpRehearsal(policy, answers=rehearsal.answers)
    return HttpGate(policy)


def call_as_team(*, files: Mapping[str, str], manifest: PluginManifest | None,
                 command: str | None, payload: Mapping[str, Any], team: TeamSettings,
                 internal_hosts: Collection[str], event: str | None = None,
                 storage: Mapping[str, Any] | None = None,
                 limits: InvokeLimits = INVOKE_LIMITS,
                 rehearsal: Rehearsal | None = None,
                 warm: WarmKey | None = None) -> CallOutcome:
    """Run `command` (or deliver `event`) of the version whose reviewed `files` and manifest
    these are, with `team`'s settings and its `storage` as loaded. ValueError only for a
    malformed call (call_plugin); whatever the plugin does is in the outcome. `warm`: a warm
    sandbox of this team's version may run it (docs/sandbox.md, "Warm sandboxes")."""
    gate = http_for_call(manifest=manifest, team=team, internal_hosts=internal_hosts,
                         rehearsal=rehearsal)
    call = PluginCall(files=files, entry=manifest.entry if manifest is not None else "",
                      command=command, event=event, payload=payload,
                      settings=dict(team.values), storage=dict(storage or {}),
                      secret_settings=team.secret_names, warm=warm)
    return call_plugin(call, limits, http=gate.perform if gate else None,
                       records=gate.records if gate else None)
