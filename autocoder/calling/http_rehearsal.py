"""`api.http` for a rehearsal ("Try it" by default, docs/marketplace.md "Try it"): every rule of
the real gate (autocoder/calling/http_gate.py: the declared hosts, the forms a secret may take,
the limits, redirects), but nothing leaves the portal, not even a DNS lookup. Each request is
recorded with what it would send and answered from the sample answers a version's examples
give (a spec's `examples[].http`, checked by autocoder/engine/spec_services.py), matched as the
test harness's recorder matches a test's answers (autocoder/sandbox/plugin_testing.py): the
same method and address without its query, an unused answer first.

A secret is never filled in: where the portal would put its value the request carries
`[secret NAME]`, so the record shows which secret goes to which host.

A ground module: the plugin contract, the standard library and the gate only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from autocoder.calling.http_gate import HttpGate, HttpPolicy, Refused, _Target
from autocoder.calling.http_records import RehearsedSend
from autocoder.plugins.hosts import DEFAULT_PORTS

PREVIEW_CHARS = 600
_ANSWER_KEYS = ("method", "url", "status", "json", "text", "headers")


def secret_placeholder(name: str) -> str:
    """What a rehearsed request carries in place of a secret's value."""
    return f"[secret {name}]"


def sample_answers(commands: Iterable[Any], command: str) -> list[dict[str, Any]]:
    """The `http` answers of a version's examples (`PluginVersion.commands`): the command's own
    first, then the other commands' (the same request may serve several)."""
    own: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for item in commands:
        if not isinstance(item, dict):
            continue
        for example in item.get("examples") or []:
            answers = example.get("http") if isinstance(example, dict) else None
            for answer in answers if isinstance(answers, list) else []:
                if isinstance(answer, dict) and isinstance(answer.get("url"), str):
                    (own if item.get("name") == command else others).append(answer)
    return own + others


def sample_settings(commands: Iterable[Any], command: str) -> dict[str, str]:
    """The settings' values the command's examples give (never a secret's: a spec refuses
    one), the first example's value of each name winning; then the other commands' values of
    the names its own do not give (an address setting's example value, say)."""
    found: dict[str, str] = {}
    listed = [item for item in commands if isinstance(item, dict)]
    for item in sorted(listed, key=lambda item: item.get("name") != command):
        for example in item.get("examples") or []:
            values = example.get("settings") if isinstance(example, dict) else None
            for name, value in (values.items() if isinstance(values, dict) else []):
                if isinstance(name, str) and isinstance(value, str):
                    found.setdefault(name, value)
    return found


class HttpRehearsal(HttpGate):
    """One try's api.http when nothing may be sent. `records` carry `rehearsal: True` and
    `sent` (the headers and the start of the body the request would carry). The policy's
    secrets are placeholders (`secret_placeholder`; team_call.http_for_call gives them)."""

    def __init__(self, policy: HttpPolicy, *, answers: Iterable[Mapping[str, Any]]) -> None:
        super().__init__(policy)
        self.answers = [dict(a) for a in answers]
        self._used: set[int] = set()

    def _exchange(self, method: str, target: _Target, headers: Mapping[str, str], body: bytes,
                  ends: float) -> tuple[int, dict[str, str], bytes]:
        # Replaces the network (the gate's _addresses and _connect): the checks before it ran.
        record = self.records[-1]
        record["rehearsal"] = True
        record["sent"] = _preview(headers, body)
        found = self._answer_for(method, target)
        if found is None:
            raise Refused("no_answer", f"rehearsal: no sample answer for {method}"
                                       f" {target.host}{target.shown_path.partition('?')[0]},"
                                       " so nothing was sent and nothing came back; the"
                                       " plugin's examples give answers only for the requests"
                                       " they make")
        return _answer(found)

    def _answer_for(self, method: str, target: _Target) -> dict[str, Any] | None:
        # A path that carries a secret cannot match a sample's written-out path: the host does.
        by_host = "[secret " in unquote(target.path)
        matching = [i for i, answer in enumerate(self.answers)
                    if _matches(answer, method, target, by_host)]
        unused = [i for i in matching if i not in self._used]
        if not (unused or matching):
            return None
        chosen = (unused or matching)[0]
        self._used.add(chosen)
        return self.answers[chosen]


def _matches(answer: Mapping[str, Any], method: str, target: _Target, by_host: bool) -> bool:
    if str(answer.get("method") or "GET").upper() != method:
        return False
    try:
        parts = urlsplit(str(answer["url"]))
        port = parts.port or DEFAULT_PORTS.get(parts.scheme.lower(), 0)
    except ValueError:
        return False
    if (parts.scheme.lower(), (parts.hostname or "").rstrip("."), port) != (
            target.scheme, target.host, target.port):
        return False
    return by_host or unquote(parts.path or "/") == unquote(target.path)


def _answer(answer: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    headers = {str(k).lower(): str(v) for k, v in (answer.get("headers") or {}).items()}
    if isinstance(answer.get("text"), str):
        content = str(answer["text"]).encode("utf-8")
    elif answer.get("json") is not None:
        content = json.dumps(answer["json"]).encode("utf-8")
        headers.setdefault("content-type", "application/json")
    else:
        content = b""
    status = answer.get("status", 200)
    return (status if isinstance(status, int) else 200), headers, content


def _preview(headers: Mapping[str, str], body: bytes) -> RehearsedSend:
    text = body.decode("utf-8", "replace")
    cut = len(text) > PREVIEW_CHARS
    return {"headers": dict(headers), "body": text[:PREVIEW_CHARS] + ("…" if cut else "")}
