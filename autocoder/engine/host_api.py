"""The host API as the model is told it (docs/plugins.md, "Host API"): one sentence per fact of
the real classes, the api a plugin receives (autocoder/runtime/host_runner.py: Api, Http,
Response, HttpError, SecretRef, Settings, Storage) and the tests' `plugin_api`
(autocoder/sandbox/plugin_testing.py). tests/engine/test_host_api_facts.py runs a check of every
fact on those classes in the sandbox, keyed as here, so a sentence cannot drift from the code.
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
         " timeout=, auth=)` reaches only these hosts: {hosts}; a request anywhere else raises"
         " `api.http.HttpError`."),
    Fact("http_answer", "Every answer comes back as a response, 4xx and 5xx too (none raises):"
         " `.status`, `.ok` (status below 400), `.text`, `.json()`, `.headers` (names in any"
         " case); `.raise_for_status()` raises `api.http.HttpError` from 400 up."),
    Fact("http_error", "`api.http.HttpError`: `str(error)` says what happened, `.kind` names it"
         " (\"status\" from raise_for_status), `.response` is the answer of a status error,"
         " else None."),
    Fact("settings", "Settings the team enters: {settings}. `api.settings[\"name\"]` is text;"
         " a name without a value raises `KeyError` (`api.settings.get(\"name\", default)`"
         " gives the default); settings are read-only.", "settings"),
    Fact("secrets", "Secrets: {secrets}. Their values never reach the plugin:"
         " `api.secret(\"name\")` is a stand-in the host fills in on the way out, as"
         " `auth=api.secret(\"name\")` (bearer), `auth=(\"user\", api.secret(\"name\"))` (basic)"
         " or inside a header or parameter value (`f\"Token {{api.secret('name')}}\"`);"
         " `api.settings[\"name\"]` of a secret raises `KeyError`, `.get` too.", "secrets"),
    Fact("storage", "`api.storage` keeps JSON values between calls: `get(key, default)`,"
         " `set(key, value)`, `delete(key)`, `[key]`, `key in`; `get` returns a copy, so set"
         " a changed value again.", "storage"),
    Fact("test_fixture", "Tests never reach a network: they take the `plugin_api` fixture (the"
         " same api; api.http records instead): `plugin_api.configure(settings={{...}})`"
         " (never a secret's value), `plugin_api.http.reply(\"POST\", url, status=200,"
         " json=... or text=..., headers=...)`, then `plugin = Plugin();"
         " plugin.on_initialize(plugin_api)`."),
    Fact("test_answers", "An answer serves the requests with its method and its address (the"
         " query left out), in the order given; when all are used the first serves again. A"
         " request with no answer raises `HttpError`: a test makes a request fail so, and an"
         " answer fail with `status=500`."),
    Fact("test_records", "`plugin_api.http.requests[i]` records each request: `.method` (upper"
         " case), `.url` (as written, query included), `.params` (a dict of text), `.headers`,"
         " `.json`, `.data`, `.auth` (`{{\"secret\": \"name\"}}` or `{{\"basic\": [\"user\","
         " {{\"secret\": \"name\"}}]}}`); `plugin_api.http.unused()` lists answers never asked"
         " for."),
)


def host_api_lines(spec: Spec) -> list[str]:
    """The facts that apply to `spec`'s plugin, filled in with its hosts, settings and
    secrets, each as a line of the contract."""
    services = spec.services
    plain = [s.name for s in services.settings if not s.secret]
    secret = [s.name for s in services.settings if s.secret]
    values = {"hosts": ", ".join(rule.text() for rule in services.hosts) or "no host",
              "settings": ", ".join(plain), "secrets": ", ".join(secret)}
    present = {"settings": bool(plain), "secrets": bool(secret), "storage": services.storage}
    return [f"  - {fact.text.format(**values)}" for fact in FACTS
            if not fact.needs or present[fact.needs]]
