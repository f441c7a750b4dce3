"""What a spec says about the other services a plugin talks to (docs/engine.md, "Spec format",
`services`), and what an example needs to be run without any network.

```json
"services": {
  "hosts": ["hooks.slack.com"],
  "settings": [{"name": "webhook_path", "description": "The path of your chat webhook"},
               {"name": "token", "description": "The chat's API token", "secret": true},
               {"name": "booking_address", "description": "The booking system's address",
                "kind": "address"}],
  "systems": [{"name": "the team chat", "does": "sends", "host": "hooks.slack.com",
               "address_setting": null, "needs": ["webhook_path", "token"]},
              {"name": "our booking system", "does": "reads", "host": null,
               "address_setting": "booking_address", "needs": []}],
  "storage": false
}
```

`systems` are the other systems in the requester's words, each with its host when the requester
knew it, or else the address setting (`kind: "address"`) the team's admin enters at activation:
the plugin takes the address from that setting, and the admin approves its host then
(docs/safety.md, "Hosts a version may reach").

and, on an example, the answers the service gives in the test (`http`) and the settings' values
for it (`settings`; a secret has no value in a test: the recording `api.http` of the test
harness shows where it would go):

```json
{"input": {...}, "output": {...},
 "settings": {"webhook_path": "/services/T1/B2"},
 "http": [{"method": "POST", "url": "https://hooks.slack.com/services/T1/B2",
           "status": 200, "text": "ok"}]}
```

An example gives an address setting a value (a placeholder such as
`https://our-booking-system.example` when nobody knows the real one): its answers may come from
that host, as the test harness lets them.

Every problem is a sentence naming the field, like the rest of the spec's checks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import urlsplit

from autocoder.plugins import HostError, HostRule, address_rule, parse_host_rule
from autocoder.plugins.declarations import IDENTIFIER, SettingDecl

MAX_HOSTS = 20
MAX_SETTINGS = 20
MAX_DESCRIPTION_CHARS = 500
MAX_ANSWERS = 20
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
MAX_SYSTEM_NAME_CHARS = 200
SYSTEM_DOES = ("reads", "sends", "both")
_SERVICES_FIELDS = ("hosts", "settings", "systems", "storage")
_SETTING_FIELDS = ("name", "description", "secret", "kind")
_SYSTEM_FIELDS = ("name", "does", "host", "address_setting", "needs")
_ANSWER_FIELDS = ("method", "url", "status", "json", "text", "headers")


class SettingDict(TypedDict, total=False):
    name: str
    description: str
    secret: bool
    kind: str  # only when the setting has one


class SystemDict(TypedDict):
    name: str
    does: str
    host: str | None
    address_setting: str | None
    needs: list[str]


class ServicesDict(TypedDict, total=False):
    """`Services.as_dict()`: the spec's `services` as it is stored."""
    hosts: list[str]
    settings: list[SettingDict]
    systems: list[SystemDict]  # only when there are any
    storage: bool


def _setting_dict(setting: SettingDecl) -> SettingDict:
    """A setting as a spec writes it (`kind` only when it has one: older specs read as they
    were)."""
    return {"name": setting.name, "description": setting.description, "secret": setting.secret,
            **({"kind": setting.kind} if setting.kind else {})}


@dataclass(frozen=True)
class SystemSpec:
    """One other system the work touches, in the requester's words: what the plugin does
    there, its host if the requester knew it, else the address setting that will hold it."""

    name: str
    does: str  # one of SYSTEM_DOES
    host: HostRule | None = None
    address_setting: str | None = None
    needs: tuple[str, ...] = ()

    def as_dict(self) -> SystemDict:
        return {"name": self.name, "does": self.does,
                "host": self.host.text() if self.host is not None else None,
                "address_setting": self.address_setting, "needs": list(self.needs)}


@dataclass(frozen=True)
class Services:
    hosts: tuple[HostRule, ...] = ()
    settings: tuple[SettingDecl, ...] = ()
    storage: bool = False
    systems: tuple[SystemSpec, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.hosts or self.settings or self.storage or self.systems)

    @property
    def secret_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.settings if s.secret)

    @property
    def address_settings(self) -> tuple[SettingDecl, ...]:
        return tuple(s for s in self.settings if s.is_address)

    def as_dict(self) -> ServicesDict:
        return {"hosts": [rule.text() for rule in self.hosts],
                "settings": [_setting_dict(s) for s in self.settings],
                # written only when there are any: older specs read as they were
                **({"systems": [system.as_dict() for system in self.systems]}
                   if self.systems else {}),
                "storage": self.storage}


def check_services(raw: object, errors: list[str]) -> Services:
    if raw is None:
        return Services()
    if not isinstance(raw, dict):
        errors.append("services: must be a JSON object with hosts, settings and storage")
        return Services()
    for key in raw:
        if key not in _SERVICES_FIELDS:
            errors.append(f"services.{key}: unknown field (expected {', '.join(_SERVICES_FIELDS)})")
    hosts = _check_hosts(raw.get("hosts", []), errors)
    settings = _check_settings(raw.get("settings", []), errors)
    systems = _check_systems(raw.get("systems", []), hosts, settings, errors)
    storage = raw.get("storage", False)
    if not isinstance(storage, bool):
        errors.append("services.storage: must be true or false")
        storage = False
    return Services(hosts=hosts, settings=settings, storage=storage, systems=systems)


def _check_hosts(raw: object, errors: list[str]) -> tuple[HostRule, ...]:
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        errors.append("services.hosts: must be a list of host names, like"
                      ' ["hooks.slack.com", "api.example.com:8443"]')
        return ()
    if len(raw) > MAX_HOSTS:
        errors.append(f"services.hosts: at most {MAX_HOSTS} (got {len(raw)})")
    rules: list[HostRule] = []
    for i, entry in enumerate(raw):
        try:
            rule = parse_host_rule(entry)
        except HostError as exc:
            errors.append(f"services.hosts[{i}]: {exc}")
            continue
        if rule not in rules:
            rules.append(rule)
    return tuple(rules)


def _check_settings(raw: object, errors: list[str]) -> tuple[SettingDecl, ...]:
    if not isinstance(raw, list):
        errors.append("services.settings: must be a list of settings")
        return ()
    if len(raw) > MAX_SETTINGS:
        errors.append(f"services.settings: at most {MAX_SETTINGS} (got {len(raw)})")
    found: list[SettingDecl] = []
    for i, item in enumerate(raw):
        where = f"services.settings[{i}]"
        if not isinstance(item, dict):
            errors.append(f"{where}: must be a JSON object with name, description and secret")
            continue
        for key in item:
            if key not in _SETTING_FIELDS:
                errors.append(f"{where}.{key}: unknown field (expected"
                              f" {', '.join(_SETTING_FIELDS)})")
        name, description = item.get("name"), item.get("description")
        secret = item.get("secret", False)
        if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
            errors.append(f"{where}.name: must be letters, digits and _ (not starting with a"
                          " digit), at most 64 characters")
            continue
        if not isinstance(description, str) or not description.strip():
            errors.append(f"{where}.description: say what the team should enter")
            description = ""
        elif len(description) > MAX_DESCRIPTION_CHARS:
            errors.append(f"{where}.description: at most {MAX_DESCRIPTION_CHARS} characters")
        if not isinstance(secret, bool):
            errors.append(f"{where}.secret: must be true or false")
            secret = True
        kind = item.get("kind", "")
        if kind not in ("", "address"):
            errors.append(f"{where}.kind: \"address\" or left out (got {kind!r})")
            kind = ""
        elif kind == "address" and secret:
            errors.append(f"{where}.secret: an address setting is never a secret (the admin "
                          "approves the host it names)")
        if any(other.name == name for other in found):
            errors.append(f"{where}.name: {name!r} is named twice")
            continue
        found.append(SettingDecl(name=name, description=description.strip(), secret=secret,
                                 kind=kind))
    return tuple(found)


def _check_systems(raw: object, hosts: tuple[HostRule, ...], settings: tuple[SettingDecl, ...],
                   errors: list[str]) -> tuple[SystemSpec, ...]:
    if not isinstance(raw, list):
        errors.append("services.systems: must be a list of systems")
        return ()
    if len(raw) > MAX_HOSTS:
        errors.append(f"services.systems: at most {MAX_HOSTS} (got {len(raw)})")
    found: list[SystemSpec] = []
    for i, item in enumerate(raw):
        system = _check_system(item, f"services.systems[{i}]", hosts, settings, errors)
        if system is not None:
            found.append(system)
    return tuple(found)


def _check_system(item: object, where: str, hosts: tuple[HostRule, ...],
                  settings: tuple[SettingDecl, ...], errors: list[str]) -> SystemSpec | None:
    if not isinstance(item, dict):
        errors.append(f"{where}: must be a JSON object with name, does, host, address_setting"
                      " and needs")
        return None
    problems = [f"{where}.{key}: unknown field (expected {', '.join(_SYSTEM_FIELDS)})"
                for key in item if key not in _SYSTEM_FIELDS]
    name, does = item.get("name"), item.get("does")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}.name: say in words what the system is")
    elif len(name) > MAX_SYSTEM_NAME_CHARS:
        problems.append(f"{where}.name: at most {MAX_SYSTEM_NAME_CHARS} characters")
    if does not in SYSTEM_DOES:
        problems.append(f"{where}.does: one of {', '.join(SYSTEM_DOES)} (got {does!r})")
    host = _system_host(item.get("host"), where, hosts, problems)
    setting = item.get("address_setting")
    addresses = {s.name for s in settings if s.kind == "address"}
    if setting is not None and setting not in addresses:
        problems.append(f"{where}.address_setting: {setting!r} is not a setting of"
                        " services.settings with kind \"address\"")
    if item.get("host") is None and setting is None:
        problems.append(f"{where}: give its host, or the address_setting the team's admin"
                        " enters its address in")
    elif item.get("host") is not None and setting is not None:
        problems.append(f"{where}: give its host or an address_setting, not both")
    needs = item.get("needs", [])
    known = {s.name for s in settings}
    if not isinstance(needs, list) or not all(isinstance(n, str) for n in needs):
        problems.append(f"{where}.needs: must be a list of setting names")
        needs = []
    problems += [f"{where}.needs: {n!r} is not a setting of services.settings"
                 for n in needs if n not in known]
    errors += problems
    if problems:
        return None
    return SystemSpec(name=" ".join(str(name).split()), does=str(does), host=host,
                      address_setting=setting, needs=tuple(dict.fromkeys(needs)))


def _system_host(raw: object, where: str, hosts: tuple[HostRule, ...],
                 problems: list[str]) -> HostRule | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        problems.append(f"{where}.host: a host name, or null when the admin enters it")
        return None
    try:
        rule = parse_host_rule(raw)
    except HostError as exc:
        problems.append(f"{where}.host: {exc}")
        return None
    if rule not in hosts:
        problems.append(f"{where}.host: {rule.text()} is not one of services.hosts")
    return rule


def check_example_services(item: Mapping[str, object], services: Services, where: str,
                           errors: list[str]) -> tuple[tuple[dict[str, Any], ...],
                                                       dict[str, str]]:
    """An example's `http` answers and `settings` values, checked against the spec's services:
    a URL to a host the plugin does not declare (nor the example's value of an address setting
    names), or a value for a secret, is refused."""
    values = item.get("settings", {})
    if not isinstance(values, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        errors.append(f"{where}.settings: must be a JSON object of texts, like"
                      ' {"channel": "#general"}')
        values = {}
    known = {s.name: s for s in services.settings}
    reachable = list(services.hosts)
    for name, value in values.items():
        if name not in known:
            errors.append(f"{where}.settings.{name}: not a setting of services.settings")
        elif known[name].secret:
            errors.append(f"{where}.settings.{name}: a secret has no value in an example (the"
                          " plugin never sees it; the test shows where it is sent)")
        elif known[name].kind == "address":
            try:
                reachable.append(address_rule(value))
            except HostError as exc:
                errors.append(f"{where}.settings.{name}: the address {exc}")
    answers = _check_answers(item.get("http", []), tuple(reachable), f"{where}.http", errors)
    return answers, dict(values)


def _check_answers(raw: object, hosts: tuple[HostRule, ...], where: str,
                   errors: list[str]) -> tuple[dict[str, Any], ...]:
    if not isinstance(raw, list):
        errors.append(f"{where}: must be a list of answers")
        return ()
    if len(raw) > MAX_ANSWERS:
        errors.append(f"{where}: at most {MAX_ANSWERS} answers (got {len(raw)})")
    answers = []
    for i, answer in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(answer, dict):
            errors.append(f"{here}: must be a JSON object with method, url, status and json or"
                          " text")
            continue
        problems = [f"{here}.{key}: unknown field (expected {', '.join(_ANSWER_FIELDS)})"
                    for key in answer if key not in _ANSWER_FIELDS]
        method = answer.get("method", "GET")
        if not isinstance(method, str) or method.upper() not in HTTP_METHODS:
            problems.append(f"{here}.method: one of {', '.join(HTTP_METHODS)}")
        problems += _url_problems(answer.get("url"), hosts, here)
        status = answer.get("status", 200)
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            problems.append(f"{here}.status: an HTTP status from 100 to 599")
        if "json" in answer and "text" in answer:
            problems.append(f"{here}: give json or text, not both")
        if "text" in answer and not isinstance(answer["text"], str):
            problems.append(f"{here}.text: must be text")
        headers = answer.get("headers", {})
        if not isinstance(headers, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
            problems.append(f"{here}.headers: must be a JSON object of texts")
        errors += problems
        if not problems:
            answers.append(json.loads(json.dumps({**answer, "method": method.upper(),
                                                  "status": status})))
    return tuple(answers)


def _url_problems(url: object, hosts: tuple[HostRule, ...], where: str) -> list[str]:
    if not isinstance(url, str):
        return [f"{where}.url: is required (the address the plugin calls)"]
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return [f"{where}.url: {url!r} is not an address"]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return [f"{where}.url: {url!r} must start with https:// (or http://) and a host"]
    if not any(rule.matches(parts.scheme, parts.hostname, port) for rule in hosts):
        return [f"{where}.url: {parts.hostname} is not one of services.hosts (nor the address"
                " an address setting of the example names), so the plugin may not reach it"]
    return []
