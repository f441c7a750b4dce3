"""Every other system the plugin works with (spec "services", docs/engine.md), as the last page
of questions asks it: for each system, what it is in the requester's words, what the plugin does
there (reads from it, sends to it, both), its web address if the requester knows it ("I don't
know, our admin does" is an answer: the address is then a setting the team's admin enters and
approves at activation), what the team must provide, and optionally a sample answer; and whether
the plugin remembers anything between uses.

The answers are kept as typed in `state["services"]`:

    {"uses": "no" | "yes", "storage": false,
     "systems": [{"name": "our booking system", "does": "reads" | "sends" | "both" | "",
                  "address": "" | "bookings.example.org", "sample": "", "method": "GET",
                  "needs": [{"name": "API key", "description": "...", "secret": true,
                             "value": ""}]}]}

An interview saved before several systems were asked (`{"uses", "service", "address",
"method", "sample", "settings"}`) is read as one system. Every read parses the answers again:
`services_errors` says what is wrong (keyed by form field), `spec_services` and `example_extras`
give what the spec records. "No" (the default) with nothing to remember gives a spec without
`services`, as before. The page's fields and rows: projects/interview/system_form.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autocoder.engine.spec_services import MAX_DESCRIPTION_CHARS, MAX_HOSTS, MAX_SETTINGS
from autocoder.plugins import HostRule
from projects.interview.system_answers import (
    host_label,
    read_address,
    read_sample,
    setting_name,
)
from projects.interview.types import (
    ServicesAnswers,
    SpecServices,
    SpecSetting,
    SpecSystem,
    SystemAnswers,
)

FIELD_USES, FIELD_STORAGE = "svc-uses", "svc-storage"
FIELD_SYSTEMS, FIELD_COUNT = "svc-systems", "svc-count"
DOES: tuple[tuple[str, str], ...] = (
    ("reads", "It reads from it (a list, a calendar, bookings)"),
    ("sends", "It sends to it (a message, a new entry)"),
    ("both", "Both: it reads from it and sends to it"),
)
METHODS: tuple[tuple[str, str], ...] = (
    ("GET", "when the tool fetches something (a list, a calendar)"),
    ("POST", "when the tool sends something (a message, a new entry)"),
)
# The buttons that change the rows (the `action` posted): the typed answers are saved first.
ADD, REMOVE, REMOVE_NEED = "svc-add", "svc-remove-", "svc-remove-need-"
MAX_SYSTEMS = MAX_HOSTS
MAX_SERVICE_CHARS = 120
NEED_PARTS = ("name", "description", "secret", "value")


def system_field(index: int, part: str) -> str:
    return f"svc-{index}-{part}"


def need_field(index: int, row: int, part: str) -> str:
    return f"svc-{index}-need-{row}-{part}"


# -- the stored answers ------------------------------------------------------------------------


def _system_of(raw: Mapping[str, Any]) -> SystemAnswers:
    does = str(raw.get("does", ""))
    return {"name": str(raw.get("name", "")), "does": does if does in dict(DOES) else "",
            "address": str(raw.get("address", "")), "sample": str(raw.get("sample", "")),
            "method": str(raw.get("method", "")).upper(),
            "needs": [dict(row) for row in raw.get("needs", []) if isinstance(row, Mapping)]}


def _one_service(stored: Mapping[str, Any]) -> list[SystemAnswers]:
    """An interview saved when only one service was asked: that service, as one system."""
    if not any(str(stored.get(key, "")).strip() for key in ("service", "address", "sample")) \
            and not stored.get("settings"):
        return []
    method = str(stored.get("method") or "POST").upper()
    return [_system_of({"name": stored.get("service", ""), "address": stored.get("address", ""),
                        "sample": stored.get("sample", ""), "method": method,
                        "does": "reads" if method == "GET" else "sends",
                        "needs": stored.get("settings", [])})]


def answers_of(state: Mapping[str, Any]) -> ServicesAnswers:
    """The stored answers, with the defaults for a question never answered ("no")."""
    stored = state.get("services") or {}
    systems = stored.get("systems")
    found = ([_system_of(item) for item in systems if isinstance(item, Mapping)]
             if isinstance(systems, list) else _one_service(stored))
    return {"uses": stored.get("uses") or "no", "storage": bool(stored.get("storage")),
            "systems": found}


def talks_to_service(state: Mapping[str, Any]) -> bool:
    return answers_of(state)["uses"] == "yes"


def _typed(system: Mapping[str, Any]) -> bool:
    """Whether anything was typed for this system (a blank one was just added, or is empty)."""
    return any(str(system.get(part, "")).strip() for part in ("name", "address", "sample")) \
        or bool(system.get("needs"))


def apply_form(state: dict[str, Any], data: Mapping[str, Any]) -> dict[str, list[str]]:
    """Store the posted section as typed (in place), with the row a button added or removed,
    and return its problems by field."""
    systems = _posted_systems(data)
    action = str(data.get("action", ""))
    if action.startswith(REMOVE_NEED):
        index, _, row = action.removeprefix(REMOVE_NEED).partition("-")
        if index.isdigit() and row.isdigit() and int(index) < len(systems):
            needs = systems[int(index)]["needs"]
            if int(row) < len(needs):
                del needs[int(row)]
    elif action.startswith(REMOVE) and action.removeprefix(REMOVE).isdigit():
        if int(action.removeprefix(REMOVE)) < len(systems):
            del systems[int(action.removeprefix(REMOVE))]
    systems = [system for system in systems if _typed(system)]
    if action == ADD and len(systems) < MAX_SYSTEMS:
        systems.append(_system_of({}))
    uses = str(data.get(FIELD_USES, "no"))
    state["services"] = {"uses": uses if uses in ("yes", "no") else "no",
                         "storage": bool(data.get(FIELD_STORAGE)), "systems": systems}
    return services_errors(state)


def _posted_systems(data: Mapping[str, Any]) -> list[SystemAnswers]:
    try:
        count = min(int(str(data.get(FIELD_COUNT, "0"))), MAX_SYSTEMS + 5)
    except ValueError:
        count = 0
    systems = []
    for index in range(max(count, 0)):
        if system_field(index, "name") not in data:
            continue
        needs = []
        for row in range(MAX_SETTINGS + 5):
            if need_field(index, row, "name") not in data:
                break
            need: dict[str, object] = {part: str(data.get(need_field(index, row, part), ""))
                                    for part in ("name", "description", "value")}
            need["secret"] = bool(data.get(need_field(index, row, "secret")))
            if any(str(need[part]).strip() for part in ("name", "description", "value")):
                needs.append(need)
        systems.append(_system_of({
            **{part: data.get(system_field(index, part), "")
               for part in ("name", "does", "address", "sample", "method")}, "needs": needs}))
    return systems


# -- reading the answers -----------------------------------------------------------------------


@dataclass(frozen=True)
class Setting:
    row: int
    name: str
    description: str
    secret: bool
    value: str


@dataclass(frozen=True)
class System:
    """One system as its answers read: what the spec records of it."""

    index: int
    name: str
    does: str
    rule: HostRule | None  # None: "I don't know the address, our admin does"
    address_setting: str  # "" when the address is known
    placeholder: str  # the address the examples use when it is not known
    needs: tuple[Setting, ...] = ()
    sample: dict[str, object] = field(default_factory=dict)  # system_answers.read_sample
    sample_url: str = ""
    method: str = "GET"


def read_systems(state: Mapping[str, Any]) -> tuple[list[System], dict[str, list[str]]]:
    """The systems typed, read, and every problem by form field (systems with a problem are
    still read as well as they can be, so the summary shows them)."""
    errors: dict[str, list[str]] = {}
    found: list[System] = []
    names: set[str] = set()
    labels: set[str] = set()
    for index, typed in enumerate(answers_of(state)["systems"]):
        if not _typed(typed):
            continue
        needs = _read_needs(index, typed, names, errors)
        found.append(_read_system(index, typed, needs, names, labels, errors))
    return found, errors


def _read_system(index: int, typed: Mapping[str, Any], needs: tuple[Setting, ...],
                 names: set[str], labels: set[str],
                 errors: dict[str, list[str]]) -> System:
    name = " ".join(typed["name"].split())
    if not name:
        errors[system_field(index, "name")] = [
            "Say in a few words what this system is, e.g. \u201cour booking system\u201d."]
    elif len(name) > MAX_SERVICE_CHARS:
        errors[system_field(index, "name")] = [
            f"Please shorten the system's name to at most {MAX_SERVICE_CHARS} characters."]
    if not typed["does"]:
        errors[system_field(index, "does")] = [
            "Choose what the tool does there: reads from it, sends to it, or both."]
    address = read_address(typed["address"]) if typed["address"].strip() else None
    if address is not None and address.problem:
        errors[system_field(index, "address")] = [address.problem]
    rule = address.rule if address is not None else None
    setting, placeholder = "", ""
    if rule is None:
        setting = _unique(f"{setting_name(name)[:55] or f'system_{index + 1}'}_address", names)
        label = host_label(name) or f"system-{index + 1}"
        while label in labels:
            label = f"{label[:45]}-{index + 1}"
        labels.add(label)
        placeholder = f"https://{label}.example"
    sample, problem = read_sample(typed["sample"])
    if problem:
        errors[system_field(index, "sample")] = [problem]
    elif sample and address is not None and rule is not None and not address.url:
        errors[system_field(index, "sample")] = [
            "For a sample answer, give the exact web address it comes from above (not one "
            "starting with *.)."]
    default_method = "POST" if typed["does"] == "sends" else "GET"
    method = typed["method"] if typed["method"] in dict(METHODS) else default_method
    return System(index=index, name=name, does=typed["does"] or "both", rule=rule,
                  address_setting=setting, placeholder=placeholder, needs=needs, sample=sample,
                  sample_url=address.url if address is not None and rule is not None
                  else f"{placeholder}/", method=method)


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 2
    while candidate in taken:
        candidate = f"{name[:60]}_{number}"
        number += 1
    taken.add(candidate)
    return candidate


def _read_needs(index: int, typed: Mapping[str, Any], names: set[str],
                errors: dict[str, list[str]]) -> tuple[Setting, ...]:
    found = []
    for row, need in enumerate(typed["needs"]):
        typed_name = str(need.get("name", ""))
        description = " ".join(str(need.get("description", "")).split())
        name = setting_name(typed_name or " ".join(description.split()[:3]))
        problems = []
        if not name:
            problems.append("Give this a name with letters, e.g. \u201cchannel\u201d or "
                            "\u201capi token\u201d.")
        elif name in names:
            problems.append(f"Two rows are both called \u201c{name}\u201d; give them "
                            "different names (e.g. add the system's name).")
        if len(description) > MAX_DESCRIPTION_CHARS:
            problems.append(f"Please shorten what the team should enter to at most "
                            f"{MAX_DESCRIPTION_CHARS} characters.")
        value = str(need.get("value", "")).strip()
        if value and need.get("secret"):
            problems.append("Leave the example value empty for a secret: the tool never sees "
                            "it, and its tests show where it would be sent instead.")
        if problems:
            errors[need_field(index, row, "name")] = problems
            continue
        names.add(name)
        found.append(Setting(row=row, name=name,
                             description=description or " ".join(typed_name.split()),
                             secret=bool(need.get("secret")), value=value))
    return tuple(found)


def services_errors(state: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every problem with the services answers, keyed by form field ({} for "no")."""
    given = answers_of(state)
    if given["uses"] != "yes":
        return {}
    systems, errors = read_systems(state)
    if not systems:
        errors[FIELD_SYSTEMS] = ["Say which system it talks to, or answer \u201cNo\u201d."]
    if len(systems) > MAX_SYSTEMS:
        errors[FIELD_SYSTEMS] = [f"Please keep it to at most {MAX_SYSTEMS} systems (there are "
                                 f"{len(systems)})."]
    settings = sum(len(s.needs) + bool(s.address_setting) for s in systems)
    if settings > MAX_SETTINGS:
        errors.setdefault(FIELD_SYSTEMS, []).append(
            f"Please keep it to at most {MAX_SETTINGS} things for the team to provide, the "
            f"addresses your admin enters included (there are {settings}).")
    return errors


# -- what the spec records ---------------------------------------------------------------------


def spec_services(state: Mapping[str, Any]) -> SpecServices | None:
    """The spec's `services`, or None when the plugin talks to nothing and remembers nothing."""
    given = answers_of(state)
    systems = read_systems(state)[0] if given["uses"] == "yes" else []
    if not systems and not given["storage"]:
        return None
    hosts: list[str] = []
    settings: list[SpecSetting] = []
    described: list[SpecSystem] = []
    for system in systems:
        host = system.rule.text() if system.rule is not None else None
        if host is not None and host not in hosts:
            hosts.append(host)
        settings += [{"name": s.name, "description": s.description, "secret": s.secret}
                     for s in system.needs]
        if system.address_setting:
            settings.append({"name": system.address_setting, "secret": False,
                             "description": f"The web address of {system.name or 'the system'}"
                                            " (e.g. https://bookings.example.org)",
                             "kind": "address"})
        described.append({"name": system.name or f"system {system.index + 1}",
                          "does": system.does, "host": host,
                          "address_setting": system.address_setting or None,
                          "needs": [s.name for s in system.needs]})
    services: SpecServices = {"hosts": hosts, "settings": settings}
    if described:
        services["systems"] = described
    services["storage"] = given["storage"]
    return services


def example_extras(state: Mapping[str, Any]) -> dict[str, object]:
    """What every example of the spec carries: the settings' example values (a placeholder
    address for an address nobody knows) and the systems' sample answers ({} for none)."""
    if not talks_to_service(state):
        return {}
    extras: dict[str, object] = {}
    values: dict[str, str] = {}
    answers = []
    for system in read_systems(state)[0]:
        values.update({s.name: s.value for s in system.needs if s.value and not s.secret})
        if system.address_setting:
            values[system.address_setting] = system.placeholder
        if system.sample and system.sample_url:
            answers.append({"method": system.method, "url": system.sample_url, "status": 200,
                            **system.sample})
    if values:
        extras["settings"] = values
    if answers:
        extras["http"] = answers
    return extras


_DOES_WORDS = {"reads": "reads from", "sends": "sends to", "both": "reads from and sends to"}


def service_line(state: Mapping[str, Any]) -> str:
    """A rule for the builder naming the systems in the requester's words ("" for none)."""
    if not talks_to_service(state):
        return ""
    parts = []
    for system in read_systems(state)[0]:
        name = system.name or "the service"
        does = _DOES_WORDS.get(system.does, "talks to")
        if system.rule is not None:
            parts.append(f"It {does} {name} at {system.rule.text()}.")
        else:
            parts.append(f"It {does} {name}, whose address the team's admin enters as the "
                         f"setting {system.address_setting}.")
    return " ".join(parts)


# -- what the pages show -----------------------------------------------------------------------


def system_words(system: System) -> str:
    """"our booking system: it reads from it, at bookings.example.org"."""
    does = {"reads": "it reads from it", "sends": "it sends to it",
            "both": "it reads from it and sends to it"}.get(system.does, "")
    where = (f"at {system.rule.text()}" if system.rule is not None else
             "its address: your team's admin enters it when the tool is activated")
    return f"{system.name or '(no name yet)'}: {does}, {where}"


def summary_lines(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The section in plain words for the summary: (what, the answer)."""
    given = answers_of(state)
    lines: list[tuple[str, str]] = []
    systems = read_systems(state)[0] if given["uses"] == "yes" else []
    for system in systems:
        lines.append(("Talks to", system_words(system)))
    if systems:
        entered = [f"{s.name} (secret)" if s.secret else s.name
                   for system in systems for s in system.needs]
        entered += [f"{system.address_setting} (the address of {system.name})"
                    for system in systems if system.address_setting]
        lines.append(("Your team enters", ", ".join(entered) or "nothing"))
        for system in systems:
            if system.sample:
                lines.append((f"Sample answer from {system.name}", "given: the tests use it"))
    else:
        lines.append(("Talks to", "no other service"))
    lines.append(("Remembers data between uses", "yes" if given["storage"] else "no"))
    return lines
