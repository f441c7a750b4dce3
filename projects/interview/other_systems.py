"""Whether the plugin talks to another service (spec "services", docs/engine.md), as the last
page of questions asks it: which service, its web address, what the team must provide, whether
it remembers anything between uses, and optionally a sample answer from the service.

The answers are kept as typed in `state["services"]`:

    {"uses": "no" | "yes", "service": "Slack", "address": "https://hooks.slack.com/services/T1",
     "method": "POST", "storage": false, "sample": "ok",
     "settings": [{"name": "Channel", "description": "...", "secret": false, "value": "#general"}]}

and every read parses them again: `services_errors` says what is wrong (keyed by form field),
`spec_services` and `example_extras` give what the spec records. "No" (the default) with
nothing to remember gives a spec without `services`, as before.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from autocoder.engine.spec_services import MAX_DESCRIPTION_CHARS, MAX_SETTINGS
from autocoder.plugins import HostError, HostRule, parse_host_rule
from autocoder.plugins.declarations import IDENTIFIER
from projects.interview.parsing import clip, parse_json

FIELD_USES, FIELD_SERVICE, FIELD_ADDRESS = "svc-uses", "svc-service", "svc-address"
FIELD_METHOD, FIELD_STORAGE, FIELD_SAMPLE = "svc-method", "svc-storage", "svc-sample"
FIELD_SETTINGS = "svc-settings"
SETTING_PARTS = ("name", "description", "secret", "value")
METHODS: tuple[tuple[str, str], ...] = (
    ("POST", "It sends something there (a message, a new entry)"),
    ("GET", "It fetches something from there (a list, a calendar)"),
)
BLANK_ROWS = 2
MAX_SAMPLE_CHARS = 8000
MAX_SERVICE_CHARS = 120


def setting_field(index: int, part: str) -> str:
    return f"svc-setting-{index}-{part}"


def answers_of(state: Mapping[str, Any]) -> dict[str, Any]:
    """The stored answers, with the defaults for a question never answered ("no")."""
    stored = state.get("services") or {}
    return {"uses": stored.get("uses") or "no", "service": stored.get("service", ""),
            "address": stored.get("address", ""), "method": stored.get("method") or "POST",
            "storage": bool(stored.get("storage")), "sample": stored.get("sample", ""),
            "settings": list(stored.get("settings", []))}


def talks_to_service(state: Mapping[str, Any]) -> bool:
    return answers_of(state)["uses"] == "yes"


def apply_form(state: dict[str, Any], data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Store the posted section as typed (in place) and return its problems by field."""
    rows = []
    for index in range(MAX_SETTINGS + BLANK_ROWS + 5):
        if setting_field(index, "name") not in data:
            break
        row: dict[str, Any] = {part: str(data.get(setting_field(index, part), ""))
                               for part in ("name", "description", "value")}
        row["secret"] = bool(data.get(setting_field(index, "secret")))
        if any(str(row[part]).strip() for part in ("name", "description", "value")):
            rows.append(row)
    uses = str(data.get(FIELD_USES, "no"))
    method = str(data.get(FIELD_METHOD, "POST")).upper()
    state["services"] = {
        "uses": uses if uses in ("yes", "no") else "no",
        "service": str(data.get(FIELD_SERVICE, "")),
        "address": str(data.get(FIELD_ADDRESS, "")),
        "method": method if method in dict(METHODS) else "POST",
        "storage": bool(data.get(FIELD_STORAGE)),
        "sample": str(data.get(FIELD_SAMPLE, "")),
        "settings": rows,
    }
    return services_errors(state)


# -- reading the answers ---------------------------------------------------------------------


@dataclass(frozen=True)
class Address:
    """The web address as typed, read: its host rule and the URL a sample answer comes from."""

    rule: HostRule | None
    url: str
    problem: str


def read_address(text: str) -> Address:
    """A host ("hooks.slack.com") or a pasted URL ("https://hooks.slack.com/services/T1"):
    the host rule it gives (checked by parse_host_rule) and the address a sample answer is for."""
    text = text.strip()
    if not text:
        return Address(None, "", "Give the service's web address, e.g. hooks.slack.com.")
    entry, url = text, ""
    if "://" in text:
        try:
            parts = urlsplit(text)
        except ValueError:
            return Address(None, "", f"\u201c{clip(text)}\u201d is not a web address.")
        scheme = parts.scheme.lower()
        entry = parts.netloc if scheme == "https" else f"{scheme}://{parts.netloc}"
        if parts.path not in ("", "/") or parts.query:
            url = urlunsplit((scheme, parts.netloc, parts.path, parts.query, ""))
    elif "/" in text:
        entry, _, rest = text.partition("/")
        url = f"https://{entry}/{rest.split('#')[0]}"
    try:
        rule = parse_host_rule(entry)
    except HostError as error:
        return Address(None, "", _address_problem(str(error)))
    if "." not in rule.host and not rule.is_ip and "://" not in text:
        return Address(None, "", f"\u201c{clip(text)}\u201d is not a whole web address: write "
                       "it with its dots, like hooks.slack.com.")
    if rule.wildcard:
        url = ""
    elif not url:
        scheme = rule.scheme
        host = f"[{rule.host}]" if ":" in rule.host else rule.host
        port = f":{rule.port}" if rule.port is not None else ""
        url = f"{scheme}://{host}{port}/"
    return Address(rule, url, "")


def _address_problem(detail: str) -> str:
    """parse_host_rule's sentence about the address, as a sentence of its own."""
    detail = detail.rstrip(".")
    if detail.split(" ", 1)[0] in ("must", "has", "may"):
        return f"The web address {detail}."
    return f"This web address cannot be used: {detail}."


def setting_name(text: str) -> str:
    """The setting's name as plugin.toml needs it: "API token" -> api_token."""
    text = text.strip()
    if IDENTIFIER.fullmatch(text):
        return text
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    name = re.sub(r"[^A-Za-z0-9]+", "_", ascii_text).strip("_").lower()[:64].rstrip("_")
    if name[:1].isdigit():
        name = f"setting_{name}"[:64].rstrip("_")
    return name


@dataclass(frozen=True)
class Setting:
    index: int
    name: str
    description: str
    secret: bool
    value: str


def read_settings(state: Mapping[str, Any]) -> tuple[list[Setting], dict[str, list[str]]]:
    """The rows of "what the team must provide", read, and each row's problems."""
    settings: list[Setting] = []
    errors: dict[str, list[str]] = {}
    rows = answers_of(state)["settings"]
    for index, row in enumerate(rows):
        typed_name, description = str(row.get("name", "")), " ".join(
            str(row.get("description", "")).split())
        name = setting_name(typed_name or " ".join(description.split()[:3]))
        problems = []
        if not name:
            problems.append("Give this a name with letters, e.g. \u201cchannel\u201d or "
                            "\u201capi token\u201d.")
        elif any(other.name == name for other in settings):
            problems.append(f"Two rows are both called \u201c{name}\u201d; give them "
                            "different names.")
        if len(description) > MAX_DESCRIPTION_CHARS:
            problems.append(f"Please shorten what the team should enter to at most "
                            f"{MAX_DESCRIPTION_CHARS} characters.")
        value = str(row.get("value", "")).strip()
        if value and row.get("secret"):
            problems.append("Leave the example value empty for a secret: the tool never sees "
                            "it, and its tests show where it would be sent instead.")
        if problems:
            errors[setting_field(index, "name")] = problems
            continue
        settings.append(Setting(index=index, name=name,
                                description=description or " ".join(typed_name.split()),
                                secret=bool(row.get("secret")), value=value))
    if len(rows) > MAX_SETTINGS:
        errors[FIELD_SETTINGS] = [f"Please keep it to at most {MAX_SETTINGS} things to "
                                  f"provide (there are {len(rows)})."]
    return settings, errors


def read_sample(text: str) -> tuple[dict[str, Any], str]:
    """A pasted answer of the service: {"json": value} or {"text": text}, or a problem."""
    text = text.replace("\r\n", "\n").strip()
    if not text:
        return {}, ""
    if len(text) > MAX_SAMPLE_CHARS:
        return {}, (f"Please shorten the sample answer to at most {MAX_SAMPLE_CHARS} "
                    f"characters (it has {len(text)}): a short extract is enough.")
    if text[:1] in "{[":
        value, problem = parse_json(text)
        if problem:
            return {}, (f"This looks like JSON but is not quite: {problem} Fix it, or paste "
                        "the answer exactly as the service gave it.")
        return {"json": value}, ""
    return {"text": text}, ""


def services_errors(state: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every problem with the services answers, keyed by form field ({} for "no")."""
    given = answers_of(state)
    if given["uses"] != "yes":
        return {}
    errors: dict[str, list[str]] = {}
    if len(given["service"]) > MAX_SERVICE_CHARS:
        errors[FIELD_SERVICE] = [f"Please shorten the service's name to at most "
                                 f"{MAX_SERVICE_CHARS} characters."]
    address = read_address(given["address"])
    if address.problem:
        errors[FIELD_ADDRESS] = [address.problem]
    _, setting_errors = read_settings(state)
    errors.update(setting_errors)
    _, sample_problem = read_sample(given["sample"])
    if sample_problem:
        errors[FIELD_SAMPLE] = [sample_problem]
    elif given["sample"].strip() and address.rule is not None and not address.url:
        errors[FIELD_SAMPLE] = ["For a sample answer, give the exact web address it comes "
                                "from above (not one starting with *.)."]
    return errors


# -- what the spec records ---------------------------------------------------------------------


def spec_services(state: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec's `services`, or None when the plugin talks to nothing and remembers nothing."""
    given = answers_of(state)
    hosts: list[str] = []
    settings: list[dict[str, Any]] = []
    if given["uses"] == "yes":
        rule = read_address(given["address"]).rule
        hosts = [rule.text()] if rule is not None else []
        settings = [{"name": s.name, "description": s.description, "secret": s.secret}
                    for s in read_settings(state)[0]]
    if not hosts and not settings and not given["storage"]:
        return None
    return {"hosts": hosts, "settings": settings, "storage": given["storage"]}


def example_extras(state: Mapping[str, Any]) -> dict[str, Any]:
    """What every example of the spec carries: the settings' example values and the service's
    sample answer for the address given ({} when there is neither)."""
    given = answers_of(state)
    if given["uses"] != "yes":
        return {}
    extras: dict[str, Any] = {}
    values = {s.name: s.value for s in read_settings(state)[0] if s.value and not s.secret}
    if values:
        extras["settings"] = values
    body, problem = read_sample(given["sample"])
    address = read_address(given["address"])
    if body and not problem and address.url:
        extras["http"] = [{"method": given["method"], "url": address.url, "status": 200, **body}]
    return extras


def service_line(state: Mapping[str, Any]) -> str:
    """A rule for the builder naming the service in the requester's words ("" for none)."""
    given = answers_of(state)
    rule = read_address(given["address"]).rule
    if given["uses"] != "yes" or rule is None:
        return ""
    service = " ".join(given["service"].split())
    return f"It talks to {service} at {rule.text()}." if service else \
        f"It talks to the service at {rule.text()}."


# -- what the pages show -----------------------------------------------------------------------


def form_view(state: Mapping[str, Any], errors: Mapping[str, list[str]]) -> dict[str, Any]:
    """The section's values, rows (the typed ones and two blank ones) and errors."""
    given = answers_of(state)
    rows = []
    typed = given["settings"]
    for index in range(min(len(typed), MAX_SETTINGS + 5) + BLANK_ROWS):
        row = typed[index] if index < len(typed) else {}
        name = str(row.get("name", ""))
        derived = setting_name(name) if name.strip() else ""
        rows.append({"number": index + 1, **{part: row.get(part, "") for part in SETTING_PARTS},
                     "fields": {part: setting_field(index, part) for part in SETTING_PARTS},
                     "derived": derived if derived and derived != name.strip() else "",
                     "errors": errors.get(setting_field(index, "name"), [])})
    return {**given, "rows": rows, "methods": METHODS,
            # keyed without the "svc-" (a template cannot look up a name with a dash)
            "errors": {key.removeprefix("svc-"): errors.get(key, []) for key in (
                FIELD_USES, FIELD_SERVICE, FIELD_ADDRESS, FIELD_SETTINGS, FIELD_SAMPLE)}}


def summary_lines(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The section in plain words for the summary: (what, the answer)."""
    given = answers_of(state)
    lines: list[tuple[str, str]] = []
    if given["uses"] == "yes":
        rule = read_address(given["address"]).rule
        service = " ".join(given["service"].split())
        host = rule.text() if rule is not None else "(no valid web address yet)"
        lines.append(("Talks to", f"{host} ({service})" if service else host))
        settings = read_settings(state)[0]
        lines.append(("Your team enters", ", ".join(
            f"{s.name} (secret)" if s.secret else s.name for s in settings) or "nothing"))
        if read_sample(given["sample"])[0]:
            lines.append(("Sample answer from the service", "given: the tests use it"))
    else:
        lines.append(("Talks to", "no other service"))
    lines.append(("Remembers data between uses", "yes" if given["storage"] else "no"))
    return lines
