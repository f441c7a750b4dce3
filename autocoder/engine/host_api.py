"""The host API as the model is told it (docs/plugins.md, "Host API"): one sentence per fact of
the real classes, the api a plugin receives (autocoder/calling/host_runner.py: Api, Settings,
Storage; autocoder/calling/plugin_http.py: Http, Response, HttpError, SecretRef) and the tests'
`plugin_api` (autocoder/sandbox/plugin_testing.py). tests/engine/test_host_api_facts.py runs a
check of every fact on those classes in the sandbox, keyed as here, so a sentence cannot drift
from the code.
"""

from __future__ import annotations

from dataclasses import dataclass

from autocoder.engine.spec import Spec


@dataclass(frozen=True)
class Fact:
    key: str
    text: str
    needs: str = ""  # "" always; "settings", "secrets" or "storage": only where the spec has them


FACTS: tuple[Fact, ...] = (
    Fact("http_call", "`api.http.get/post/put/patch/delete(url, params=, headers=, json=, data=,"
         " timeout=, auth=)` reaches only these hosts: {hosts}; elsewhere it raises"
         " `api.http.HttpError`."),
    Fact("http_answer", "Every answer is a response, 4xx and 5xx too (no exception): `.status`,"
         " `.ok` (below 400), `.text`, `.json()`, `.headers` (any case);"
         " `.raise_for_status()` raises `api.http.HttpError` from 400 up."),
    Fact("http_error", "`api.http.HttpError`: `str(error)` says what happened, `.kind` what kind"
         " (\"status\" from raise_for_status), `.response` the answer of a status error, else"
         " None."),
    Fact("settings", "Settings the team enters: {settings}. `api.settings[\"name\"]` is text;"
         " one without a value raises `KeyError` (`.get(\"name\", default)` gives the"
         " default); read-only.", "settings"),
    Fact("secrets", "Secrets: {secrets}, never readable by the plugin: `api.secret(\"name\")`"
         " is a stand-in the host fills in on the way out, as `auth=api.secret(\"name\")`"
         " (bearer), `auth=(\"user\", api.secret(\"name\"))` (basic) or in a header or"
         " parameter value (`f\"Token {{api.secret('name')}}\"`); `api.settings[\"name\"]` (and"
         " `.get`) of a secret raises `KeyError`.", "secrets"),
    Fact("storage", "`api.storage` keeps JSON values between calls: `get(key, default)`,"
         " `set(key, value)`, `delete(key)`, `[key]`, `key in`; `get` returns a copy: set a"
         " changed value again.", "storage"),
    Fact("test_fixture", "Tests never reach a network: they take the `plugin_api` fixture (the"
         " same api, with a recording api.http): `plugin_api.configure(settings={{...}})` (no"
         " secret values), `plugin_api.http.reply(\"POST\", url, status=200, json=... or"
         " text=..., headers=...)`, then `plugin = Plugin(); plugin.on_initialize(plugin_api)`."),
    Fact("test_answers", "An answer serves requests of its method and address (query ignored)"
         " in order; when all are used the first serves again. A request with no answer"
         " raises `HttpError` (so a test makes a request fail; `status=500` makes an answer"
         " fail)."),
    Fact("test_records", "`plugin_api.http.requests[i]`: `.method` (upper case), `.url` (as"
         " written, with its query), `.params` (a dict of text), `.headers`, `.json`, `.data`,"
         " `.auth` (`{{\"secret\": \"name\"}}`, `{{\"basic\": [\"user\", {{\"secret\":"
         " \"name\"}}]}}`); `plugin_api.http.unused()`: answers never asked for."),
)
# How much of the tests' harness a role is told: all of it, the fixture alone, or none.
HARNESS = {"all": ("test_fixture", "test_answers", "test_records"), "fixture": ("test_fixture",),
           "none": ()}


def host_api_lines(spec: Spec, *, harness: str = "all") -> list[str]:
    """The facts that apply to `spec`'s plugin, filled in with its hosts, settings and
    secrets, each as a line of the contract; `harness`: how much of the tests' (HARNESS)."""
    services = spec.services
    # An address setting is told with its system (engine/prompting.py, _systems_lines).
    plain = [s.name for s in services.settings if not s.secret and s.kind != "address"]
    secret = [s.name for s in services.settings if s.secret]
    hosts = ", ".join(rule.text() for rule in services.hosts) or "no host"
    if services.address_settings:
        hosts += ", and the addresses of the address settings below"
    values = {"hosts": hosts,
              "settings": ", ".join(plain), "secrets": ", ".join(secret)}
    present = {"settings": bool(plain), "secrets": bool(secret), "storage": services.storage}
    return [f"  - {fact.text.format(**values)}" for fact in FACTS
            if (not fact.needs or present[fact.needs])
            and (not fact.key.startswith("test_") or fact.key in HARNESS[harness])]
