"""The other services a plugin reaches, as the review page of a plan, change or publish request
shows them (issue 27): each host it sends data to, the settings the team must enter (secrets
marked), and the hosts a permissions request adds.

The systems in the requester's words (spec `services.systems`) and the address settings, whose
host the team's admin enters and approves at activation, are listed too.

The gates write them into the request (`payload["services"]`: the plan and change gates from the
spec and the plugin.toml at hand, the publish gate from the plugin.toml it publishes); a request
made before that is read from its attempt's plugin.toml.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from autocoder.plugins import HostError, parse_host_rule, read_manifest
from projects.interview.types import SpecSetting
from runs.models import ApprovalRequest, Iteration

KINDS = (ApprovalRequest.Kind.PLAN, ApprovalRequest.Kind.CHANGE, ApprovalRequest.Kind.PUBLISH)


@dataclass(frozen=True)
class Host:
    name: str  # as plugin.toml writes it
    note: str = ""  # what the name means when it is more than one plain https host
    new: bool = False  # asked for by this request's permissions change


@dataclass(frozen=True)
class System:
    """One other system in the requester's words, as a gate lists it."""

    name: str
    does: str  # "reads from it", "sends to it", ...
    where: str  # "at bookings.example.org", "at the address the team's admin enters ..."


_DOES = {"reads": "reads from it", "sends": "sends data to it",
         "both": "reads from it and sends data to it"}


@dataclass(frozen=True)
class OtherServices:
    hosts: list[Host] = field(default_factory=list)
    settings: list[SpecSetting] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # hosts the change stops reaching
    systems: list[System] = field(default_factory=list)

    @property
    def addresses(self) -> list[SpecSetting]:
        """The address settings: hosts the team's admin enters and approves at activation."""
        return [s for s in self.settings if s.get("kind") == "address"]

    @property
    def new_hosts(self) -> list[str]:
        return [host.name for host in self.hosts if host.new]

    @property
    def empty(self) -> bool:
        return not (self.hosts or self.settings or self.systems)


def other_services(approval: ApprovalRequest, iteration: Iteration | None) -> OtherServices | None:
    """What the review page shows of the services the plugin reaches (None: a request about
    something else, such as a budget)."""
    if approval.kind not in KINDS:
        return None
    payload = approval.payload or {}
    services = payload.get("services")
    if not isinstance(services, dict):
        services = _from_files(iteration.files if iteration is not None else {})
    change = payload.get("permissions_change") or {}
    before = list((change.get("from") or {}).get("hosts") or [])
    after = list((change.get("to") or {}).get("hosts") or [])
    names = list(services.get("hosts") or [])
    names += [name for name in after if name not in names]
    return OtherServices(
        hosts=[Host(name, _note(name), new=bool(change) and name not in before) for name in names],
        settings=_settings(services.get("settings")),
        dropped=[name for name in before if name not in after] if change else [],
        systems=_systems(services.get("systems")))


def _settings(raw: object) -> list[SpecSetting]:
    """The spec's settings as the run's payload stored them (SpecSetting, the interview's)."""
    return [cast(SpecSetting, s) for s in (raw if isinstance(raw, list) else [])
            if isinstance(s, dict)]


def _systems(raw: object) -> list[System]:
    found = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        where = (f"at {item['host']}" if item.get("host") else
                 "at the address the team's admin enters when activating it"
                 + (f" ({item['address_setting']})" if item.get("address_setting") else "")
                 + " and approves then")
        found.append(System(name=item["name"], does=_DOES.get(str(item.get("does")), ""),
                            where=where))
    return found


def _from_files(files: dict[str, str]) -> dict[str, Any]:
    manifest = read_manifest(files.get("plugin.toml", "")) if files.get("plugin.toml") else None
    if manifest is None:
        return {}
    return {"hosts": [rule.text() for rule in manifest.hosts],
            "settings": [{"name": s.name, "description": s.description, "secret": s.secret,
                          **({"kind": s.kind} if s.kind else {})} for s in manifest.settings]}


def _note(name: str) -> str:
    try:
        rule = parse_host_rule(name)
    except HostError:
        return ""
    notes = []
    if rule.wildcard:
        notes.append(f"any address ending in .{rule.host}")
    if rule.scheme == "http":
        notes.append("without encryption (plain http)")
    if rule.is_ip:
        notes.append("an address inside a network, only if a site admin allows it")
    return "; ".join(notes)
