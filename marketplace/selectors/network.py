"""What a version may reach, in the one set of words the marketplace page and a team's activation
review both show (templates/marketplace/_network.html; docs/marketplace.md, "What a plugin may
reach"): the hosts its reviewed plugin.toml declares, the address settings (`kind = "address"`)
whose address a team admin enters and approves at activation, what it does there, and which
secret the portal adds to the requests to which host. On a team's review each address also says
what the team entered and who approved it (`entered`, from tools/services/addresses.py), in the
same line: one list, never "none" above "sends data to".

Which secret goes where is known when the version was built from a request whose interview
named, for each system, its address and what the team provides for it (the spec's
`services.systems`), or when the plugin reaches one host only. Otherwise the page says what the
gate guarantees: the portal adds the secrets to requests to the declared hosts, to no other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from autocoder.plugins import HostError, HostRule, SettingDecl, parse_host_rule
from marketplace.models import PluginVersion

_DOES = {"reads": "reads from it", "sends": "sends data to it",
         "both": "sends data to it and reads from it"}


class AddressSeen(Protocol):
    """What a team entered for an address setting, and who approved it (the tools app's
    AddressPermission)."""

    @property
    def host(self) -> str: ...  # "" while none is entered

    @property
    def approved_by(self) -> str: ...  # "" while not approved for the activation

    @property
    def approved_at(self) -> datetime | None: ...


@dataclass(frozen=True)
class Reach:
    """One service the version reaches: a declared host, or (`host` "") an address the team
    enters as the setting `address_setting` (described as `description`), with what the team
    entered for it when the page is a team's (`entered`)."""

    host: str
    system: str  # what it is, in the requester's words ("our booking system"); "" unknown
    does: str  # "reads from it", ...; "" unknown
    secrets: tuple[SettingDecl, ...]
    address_setting: str = ""
    description: str = ""
    entered: AddressSeen | None = None


@dataclass(frozen=True)
class NetworkSummary:
    reaches: tuple[Reach, ...]
    # secrets whose host is not known: the portal adds them to requests to any declared host
    secrets_to_any: tuple[SettingDecl, ...]
    asks_network: bool  # [permissions] network = true: network modules, never a network

    @property
    def hosts(self) -> list[str]:
        return [reach.host for reach in self.reaches if reach.host]

    @property
    def headline(self) -> str:
        if not self.reaches:
            return ("Other services: none. It cannot send your data anywhere: it declares no"
                    " service to reach, and the sandbox it runs in has no network.")
        count = len(self.reaches)
        return (f"Other services: it sends data to and reads from {count} service"
                f"{'s' if count > 1 else ''}, only through the portal, which makes each request"
                " for it and adds its secrets to the requests to these hosts and to no others:")

    @property
    def network_note(self) -> str:
        if not self.asks_network:
            return ""
        if self.reaches:
            return ("Its code also asks for network access; the sandbox gives none, so it"
                    " reaches only the services above, through the portal.")
        return ("Its code asks for network access; the sandbox gives none, so calls that need"
                " it fail.")


def network_summary(version: PluginVersion, *,
                    entered: Mapping[str, AddressSeen] | None = None) -> NetworkSummary:
    """The version's reach, from its reviewed plugin.toml (its hosts and address settings) and,
    for a generated one, its spec's systems. `entered`: a team's addresses, by setting name."""
    manifest = version.reviewed_manifest
    rules = tuple(manifest.hosts) if manifest is not None else ()
    addresses = tuple(manifest.address_settings) if manifest is not None else ()
    secrets = tuple(item for item in (manifest.settings if manifest else ()) if item.secret)
    asks = manifest is not None and manifest.network
    systems = _systems(version.spec)
    only_one = len(rules) + len(addresses) == 1 and not systems  # its secrets go there
    reaches: list[Reach] = []
    placed: set[str] = set()
    for rule in rules:
        system = next((s for s in systems if _same_host(rule, s.get("host"))), {})
        needs = _needs(system)
        given = tuple(s for s in secrets if s.name in needs or only_one)
        placed.update(s.name for s in given)
        reaches.append(Reach(host=rule.text(), system=str(system.get("name") or ""),
                             does=_DOES.get(str(system.get("does")), ""), secrets=given))
    for setting in addresses:  # an address the team's admin enters and approves
        system = next((s for s in systems if s.get("address_setting") == setting.name), {})
        needs = _needs(system)
        given = tuple(s for s in secrets if s.name in needs or only_one)
        placed.update(s.name for s in given)
        reaches.append(Reach(host="", system=str(system.get("name") or ""),
                             does=_DOES.get(str(system.get("does")), ""), secrets=given,
                             address_setting=setting.name, description=setting.description,
                             entered=(entered or {}).get(setting.name)))
    return NetworkSummary(reaches=tuple(reaches), asks_network=asks,
                          secrets_to_any=tuple(s for s in secrets if s.name not in placed)
                          if reaches else ())


def _systems(spec: Any) -> list[Mapping[str, Any]]:
    services = spec.get("services") if isinstance(spec, dict) else None
    systems = services.get("systems") if isinstance(services, dict) else None
    return [s for s in systems if isinstance(s, dict)] if isinstance(systems, list) else []


def _needs(system: Mapping[str, Any]) -> set[str]:
    needs = system.get("needs")
    return {str(n) for n in needs} if isinstance(needs, list) else set()


def _same_host(rule: HostRule, text: object) -> bool:
    if not isinstance(text, str) or not text:
        return False
    try:
        named = parse_host_rule(text)
    except HostError:
        return False
    return named == rule or (named.host == rule.host and named.wildcard == rule.wildcard)
