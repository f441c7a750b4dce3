"""The plugins' test harness: a pytest plugin copied into every test run of a plugin (a generated
one, an upload) as `_autocoder_testing.py`, next to the host's own runner as `_autocoder_host.py`
(docs/plugins.md, "Testing a plugin that talks to other services").

It gives the tests one fixture, `plugin_api`: the same `api` a plugin receives in a real call
(settings, storage, log, `api.secret`, the same `api.http` client and errors), except that
`api.http` never reaches a network. Each request is checked against the hosts plugin.toml
declares (as the host checks it), recorded, and answered from the answers the test gave:

    def test_posts_the_summary(plugin_api):
        plugin_api.configure(settings={"channel": "#volunteers"})
        plugin_api.http.reply("POST", "https://hooks.slack.com/services/T1/B2", text="ok")
        plugin = Plugin()
        plugin.on_initialize(plugin_api)
        assert plugin.on_command("post-summary", {"hours": 12}) == {"posted": True}
        sent = plugin_api.http.requests[0]
        assert sent.json == {"text": "12 volunteer hours last week", "channel": "#volunteers"}
        assert sent.auth == {"secret": "token"}   # the host would fill in the token here

A secret has no value here: the record shows where the host would send it. An address setting
(`kind = "address"` in plugin.toml) given a value in `configure()` lets the plugin reach that
address's host, as the activation's approval does for a real call (docs/safety.md, "Hosts a
version may reach"); the spec's examples give such settings a placeholder address. Standard
library only; it runs inside the sandbox on the plugin runtime.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from _autocoder_host import Api, Settings, Storage  # the host's own classes: the same api

# ... its api.http client (autocoder/calling/plugin_http.py) and its rule for the hosts a
# plugin may reach (autocoder/plugins/hosts.py), shipped beside this file
from _autocoder_hosts import HostError, HostRule, address_rule, host_rules, split_host_port
from _autocoder_http import NO_HOSTS, Http, HttpError

STORAGE_MAX_BYTES = 1024 * 1024


class SentRequest:
    """One request the plugin made, as the host would have received it."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.method: str = message["method"]
        self.url: str = message["url"]
        self.params: dict[str, Any] = message.get("params") or {}
        self.headers: dict[str, str] = message.get("headers") or {}
        self.json: Any = message.get("json")
        self.data: dict[str, Any] | None = message.get("data")
        body = message.get("body_b64")
        self.content: bytes | None = __import__("base64").b64decode(body) if body else None
        self.auth: Any = message.get("auth")  # {"secret": NAME} or {"basic": [user, {...}]}
        self.sign: Any = message.get("sign")
        self.timeout: float | None = message.get("timeout")

    def __repr__(self) -> str:
        return f"<SentRequest {self.method} {self.url}>"


class RecordingHttp(Http):
    """api.http for tests: requests are recorded and answered from `reply(...)`."""

    def __init__(self, hosts: list[HostRule], secrets: frozenset[str],
                 addresses: bool = False) -> None:
        super().__init__("recording" if hosts or addresses else None)
        self._hosts, self._secrets = hosts, secrets
        self.addresses: list[HostRule] = []  # from address settings' values
        self._answers: list[dict[str, Any]] = []
        self._used: set[int] = set()
        self.requests: list[SentRequest] = []

    def reply(self, method: str, url: str, *, status: int = 200, json: Any = None,
              text: str | None = None, headers: dict[str, str] | None = None) -> None:
        """Answer the plugin's `method url` (the address without its query) with this."""
        self._answers.append({"method": method.upper(), "url": url, "status": status,
                              "json": json, "text": text, "headers": headers or {}})

    def unused(self) -> list[str]:
        """The answers given that no request asked for ("POST https://...")."""
        return [f"{a['method']} {a['url']}" for i, a in enumerate(self._answers)
                if i not in self._used]

    def _exchange(self, data: bytes) -> Any:
        message = json.loads(data[4:].decode("utf-8"))
        refusal = self._refusal(message)
        if refusal:
            return {"ok": False, "error": refusal[1], "error_kind": refusal[0]}
        self.requests.append(SentRequest(message))
        index = self._answer_for(message["method"], message["url"])
        if index is None:
            return {"ok": False, "error_kind": "no_answer",
                    "error": f"the test gave no answer for {message['method']}"
                             f" {_without_query(message['url'])}: add"
                             " plugin_api.http.reply(method, url, ...)"}
        self._used.add(index)
        answer = self._answers[index]
        headers = dict(answer["headers"])
        if answer["text"] is not None:
            body = answer["text"].encode("utf-8")
        elif answer["json"] is not None:
            body = json.dumps(answer["json"]).encode("utf-8")
            headers.setdefault("content-type", "application/json")
        else:
            body = b""
        return {"ok": True, "status": answer["status"], "headers": headers,
                "body_b64": __import__("base64").b64encode(body).decode("ascii"),
                "url": message["url"]}

    def _refusal(self, message: dict[str, Any]) -> tuple[str, str] | None:
        """The host's refusal of a request to a host neither declared nor an address given,
        by the host's rule (the scheme, the name, the port: plugins/hosts.py)."""
        try:
            parts = urlsplit(message["url"])
            host, port = split_host_port(parts.netloc.removesuffix(":"))
        except ValueError:  # HostError too
            return "bad_url", f"{message['url']!r} is not an address"
        if not any(rule.matches(parts.scheme, host, port)
                   for rule in self._hosts + self.addresses):
            return ("host_not_declared",
                    f"{host.lower() or message['url']} is not one of the hosts plugin.toml"
                    " declares ([permissions] hosts), nor the address of an address setting"
                    " given in configure(settings=...), so the host refuses the request")
        for name in _secret_names(message):
            if name not in self._secrets:
                return ("secret_unknown", f"api.secret({name!r}) is not a secret setting of"
                        " plugin.toml ([[settings]] with secret = true)")
        return None

    def _answer_for(self, method: str, url: str) -> int | None:
        matching = [i for i, a in enumerate(self._answers)
                    if a["method"] == method and _without_query(a["url"]) == _without_query(url)]
        unused = [i for i in matching if i not in self._used]
        found = unused or matching
        return found[0] if found else None


class TestApi(Api):
    """The `api` of a real call, for a test: `configure()` sets the settings and storage."""

    __test__ = False

    def __init__(self, root: Path) -> None:
        manifest = _manifest(root)
        self._secret_names = frozenset(str(s.get("name")) for s in manifest.get("settings", [])
                                       if isinstance(s, dict) and s.get("secret") is True)
        self._address_names = frozenset(
            str(s.get("name")) for s in manifest.get("settings", [])
            if isinstance(s, dict) and s.get("kind") == "address")
        permissions = manifest.get("permissions", {})
        self._rules = list(host_rules(permissions.get("hosts", []) if isinstance(
            permissions, dict) else [], []))
        super().__init__(Settings({}, list(self._secret_names)),
                         Storage({}, STORAGE_MAX_BYTES), 200, 2000)
        self._recording = RecordingHttp(self._rules, self._secret_names,
                                        addresses=bool(self._address_names))

    @property
    def http(self) -> RecordingHttp:  # type: ignore[override]
        return self._recording

    def configure(self, *, settings: dict[str, str] | None = None,
                  storage: dict[str, Any] | None = None) -> None:
        """The team's settings (a secret's value never: the plugin cannot read one) and what
        api.storage holds before the call."""
        given = dict(settings or {})
        secret = sorted(set(given) & self._secret_names)
        if secret:
            raise ValueError(f"{secret} are secret settings: the plugin never reads their"
                             " values, so a test gives none")
        self.settings = Settings(given, list(self._secret_names))
        self._recording.addresses = [rule for rule in (_address(given[name]) for name in sorted(
            self._address_names & set(given))) if rule is not None]
        if storage is not None:
            self.storage = Storage(storage, STORAGE_MAX_BYTES)


def _manifest(root: Path) -> dict[str, Any]:
    try:
        return tomllib.loads((root / "plugin.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return {}


def _address(value: object) -> HostRule | None:
    """The host an address setting's value names (`bookings.example.org`,
    `https://bookings.example.org/api`), as the activation's approval reads it (None: it names
    none, so the request is refused in words)."""
    try:
        return address_rule(str(value))
    except HostError:
        return None


def _secret_names(message: dict[str, Any]) -> list[str]:
    names = []
    for part in (message.get("auth"), message.get("sign")):
        text = json.dumps(part) if part is not None else ""
        while '"secret": "' in text:
            text = text.split('"secret": "', 1)[1]
            names.append(text.split('"', 1)[0])
    return names


def _without_query(url: str) -> str:
    return url.split("?", 1)[0].split("#", 1)[0]


@pytest.fixture
def plugin_api(request: pytest.FixtureRequest) -> TestApi:
    """The `api` a plugin's on_initialize receives, with a recording api.http."""
    return TestApi(Path(str(request.config.rootpath)))


__all__ = ["NO_HOSTS", "HttpError", "RecordingHttp", "SentRequest", "TestApi", "plugin_api"]
