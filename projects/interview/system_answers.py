"""Reading what the requester typed about one other system: its web address, the names of what
the team provides, a sample answer of the system (projects/interview/other_systems.py uses them).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from autocoder.plugins import HostError, HostRule, parse_host_rule
from autocoder.plugins.declarations import IDENTIFIER
from projects.interview.parsing import clip, parse_json

MAX_SAMPLE_CHARS = 8000


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


def host_label(text: str) -> str:
    """A DNS label from a system's name ("Our booking system" -> our-booking-system): the
    placeholder address its examples use when nobody knows the real one."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:50].strip("-")


def read_sample(text: str) -> tuple[dict[str, object], str]:
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
