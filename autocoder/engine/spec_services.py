"""What a spec says about the other services a plugin talks to (docs/engine.md, "Spec format",
`services`), and what an example needs to be run without any network.

```json
"services": {
  "hosts": ["hooks.slack.com"],
  "settings": [{"name": "webhook_path", "description": "The path of your chat webhook"},
               {"name": "token", "description": "The chat's API token", "secret": true}],
  "storage": false
}
```

and, on an example, the answers the service gives in the test (`http`) and the settings' values
for it (`settings`; a secret has no value in a test: the recording `api.http` of the test
harness shows where it would go):

```json
{"input": {...}, "output": {...},
 "settings": {"webhook_path": "/services/T1/B2"},
 "http": [{"method": "POST", "url": "https://hooks.slack.com/services/T1/B2",
           "status": 200, "text": "ok"}]}
```

Every problem is a sentence naming the field, like the rest of the spec's checks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from autocoder.plugins import HostError, HostRule, parse_host_rule
from autocoder.plugins.declarations import IDENTIFIER

MAX_HOSTS = 20
MAX_SETTINGS = 20
MAX_DESCRIPTION_CHARS = 500
MAX_ANSWERS = 20
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
_SERVICES_FIELDS = ("hosts", "settings", "storage")
_SETTING_FIELDS = ("name", "description", "secret")
_ANSWER_FIELDS = ("method", "url", "status", "json", "text", "headers")


@dataclass(frozen=True)
class SettingSpec:
    """A value the team enters when it activates the plugin (a secret: never shown again and
    never given to the plugin; api.http sends it)."""

    name: str
    description: str
    secret: bool = False


@dataclass(frozen=True)
class Services:
    hosts: tuple[HostRule, ...] = ()
    settings: tuple[SettingSpec, ...] = ()
    storage: bool = False

    def __bool__(self) -> bool:
        return bool(self.hosts or self.settings or self.storage)

    @property
    def secret_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.settings if s.secret)

    def as_dict(self) -> dict[str, Any]:
        return {"hosts": [rule.text() for rule in self.hosts],
                "settings": [{"name": s.name, "description": s.description, "secret": s.secret}
                             for s in self.settings],
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
    storage = raw.get("storage", False)
    if not isinstance(storage, bool):
        errors.append("services.storage: must be true or false")
        storage = False
    return Services(hosts=hosts, settings=settings, storage=storage)


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


def _check_settings(raw: object, errors: list[str]) -> tuple[SettingSpec, ...]:
    if not isinstance(raw, list):
        errors.append("services.settings: must be a list of settings")
        return ()
    if len(raw) > MAX_SETTINGS:
        errors.append(f"services.settings: at most {MAX_SETTINGS} (got {len(raw)})")
    found: list[SettingSpec] = []
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
        if any(other.name == name for other in found):
            errors.append(f"{where}.name: {name!r} is named twice")
            continue
        found.append(SettingSpec(name=name, description=description.strip(), secret=secret))
    return tuple(found)


def check_example_services(item: dict[str, Any], services: Services, where: str,
                           errors: list[str]) -> tuple[tuple[dict[str, Any], ...],
                                                       dict[str, str]]:
    """An example's `http` answers and `settings` values, checked against the spec's services:
    a URL to a host the plugin does not declare, or a value for a secret, is refused."""
    answers = _check_answers(item.get("http", []), services, f"{where}.http", errors)
    values = item.get("settings", {})
    if not isinstance(values, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        errors.append(f"{where}.settings: must be a JSON object of texts, like"
                      ' {"channel": "#general"}')
        return answers, {}
    known = {s.name: s for s in services.settings}
    for name in values:
        if name not in known:
            errors.append(f"{where}.settings.{name}: not a setting of services.settings")
        elif known[name].secret:
            errors.append(f"{where}.settings.{name}: a secret has no value in an example (the"
                          " plugin never sees it; the test shows where it is sent)")
    return answers, dict(values)


def _check_answers(raw: object, services: Services, where: str,
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
        problems += _url_problems(answer.get("url"), services, here)
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


def _url_problems(url: object, services: Services, where: str) -> list[str]:
    if not isinstance(url, str):
        return [f"{where}.url: is required (the address the plugin calls)"]
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return [f"{where}.url: {url!r} is not an address"]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return [f"{where}.url: {url!r} must start with https:// (or http://) and a host"]
    if not any(rule.matches(parts.scheme, parts.hostname, port) for rule in services.hosts):
        return [f"{where}.url: {parts.hostname} is not one of services.hosts, so the plugin"
                " may not reach it"]
    return []
