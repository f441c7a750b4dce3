"""Every sentence the model is told about the host API (autocoder/engine/host_api.py) is true of
the real classes: each fact has a check here, run as a plugin's test in the real sandbox with the
real `plugin_api` harness and the host's own api classes, and a fact without a check fails.
"""

from __future__ import annotations

import pytest

from autocoder.engine.host_api import FACTS, host_api_lines
from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_dict
from autocoder.sandbox import Limits
from autocoder.sandbox.pytest_runner import run_pytest

HOOK = "https://hooks.slack.com/services/T1/B2"
SPEC = {
    "name": "volunteer-hours", "summary": "Posts volunteer hours to the chat.",
    "services": {"hosts": ["hooks.slack.com"], "storage": True, "settings": [
        {"name": "channel", "description": "The chat channel"},
        {"name": "token", "description": "The chat's token", "secret": True}]},
    "commands": [{"name": "post-summary", "examples": [
        {"input": {"hours": 12}, "output": {"posted": True}, "settings": {"channel": "#vol"},
         "http": [{"method": "POST", "url": HOOK, "text": "ok"}]}]}],
}
PLUGIN = '''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        self.api.http.post(HOOK, json={"text": str(payload["hours"])}).raise_for_status()
        return {"posted": True}
'''.replace("HOOK", repr(HOOK))

CHECKS = {
    "http_call": '''
def test_http_call(plugin_api):
    for method in ("get", "post", "put", "patch", "delete"):
        plugin_api.http.reply(method.upper(), HOOK, text="ok")
        answer = getattr(plugin_api.http, method)(
            HOOK, params={"a": "1"}, headers={"X-A": "b"}, timeout=5,
            auth=plugin_api.secret("token"))
        assert answer.text == "ok"
    plugin_api.http.post(HOOK, json={"a": 1})
    plugin_api.http.post(HOOK, data={"a": "1"})
    with pytest.raises(plugin_api.http.HttpError):
        plugin_api.http.get("https://example.com/elsewhere")
''',
    "http_answer": '''
def test_http_answer(plugin_api):
    plugin_api.http.reply("GET", HOOK, status=404, json={"error": "gone"},
                          headers={"X-Rate": "5"})
    answer = plugin_api.http.get(HOOK)  # no exception for a 4xx
    assert (answer.status, answer.ok) == (404, False)
    assert answer.json() == {"error": "gone"} and '"gone"' in answer.text
    assert answer.headers["x-rate"] == answer.headers["X-RATE"] == "5"
    with pytest.raises(plugin_api.http.HttpError):
        answer.raise_for_status()
    plugin_api.http.reply("GET", HOOK + "/a", status=399, text="fine")
    plugin_api.http.reply("GET", HOOK + "/b", status=500, text="down")
    assert plugin_api.http.get(HOOK + "/a").ok is True
    assert plugin_api.http.get(HOOK + "/b").status == 500  # no exception for a 5xx either
''',
    "http_error": '''
def test_http_error(plugin_api):
    plugin_api.http.reply("GET", HOOK, status=503, text="busy")
    with pytest.raises(plugin_api.http.HttpError) as caught:
        plugin_api.http.get(HOOK).raise_for_status()
    assert caught.value.kind == "status" and caught.value.response.status == 503
    assert "503" in str(caught.value)
    with pytest.raises(plugin_api.http.HttpError) as refused:
        plugin_api.http.get("https://example.com/x")
    assert refused.value.response is None and "example.com" in str(refused.value)
    assert refused.value.kind
''',
    "settings": '''
def test_settings(plugin_api):
    plugin_api.configure(settings={"channel": "#vol"})
    assert plugin_api.settings["channel"] == "#vol"
    assert plugin_api.settings.get("elsewhere", "default") == "default"
    with pytest.raises(KeyError):
        plugin_api.settings["elsewhere"]
    with pytest.raises(TypeError):
        plugin_api.settings["channel"] = "#other"
    plugin_api.configure(settings={})
    with pytest.raises(KeyError):
        plugin_api.settings["channel"]  # declared, but the team gave no value
''',
    "secrets": '''
def test_secrets(plugin_api):
    token = plugin_api.secret("token")
    plugin_api.http.reply("POST", HOOK, text="ok")
    plugin_api.http.post(HOOK, auth=token)
    plugin_api.http.post(HOOK, auth=("me", token))
    plugin_api.http.post(HOOK, headers={"Authorization": f"Token {token}"},
                         params={"key": token})
    first, basic, inside = plugin_api.http.requests
    assert first.auth == {"secret": "token"}
    assert basic.auth == {"basic": ["me", {"secret": "token"}]}
    assert inside.headers == {"Authorization": "Token {token}"}
    assert inside.params == {"key": "{token}"}
    with pytest.raises(KeyError):
        plugin_api.settings["token"]
    with pytest.raises(KeyError):
        plugin_api.settings.get("token")
    with pytest.raises(ValueError):
        plugin_api.configure(settings={"token": "the value"})
''',
    "storage": '''
def test_storage(plugin_api):
    store = plugin_api.storage
    store.set("weeks", [1, 2])
    store["name"] = "vol"
    assert store.get("weeks") == [1, 2] and store["name"] == "vol" and "name" in store
    assert store.get("missing", 7) == 7
    copy = store.get("weeks")
    copy.append(3)
    assert store.get("weeks") == [1, 2]  # a copy: set it again to keep a change
    store.delete("weeks")
    assert "weeks" not in store
''',
    "test_fixture": '''
def test_test_fixture(plugin_api):
    plugin_api.configure(settings={"channel": "#vol"})
    plugin_api.http.reply("POST", HOOK, status=200, text="ok", headers={"X-A": "1"})
    plugin = Plugin()
    plugin.on_initialize(plugin_api)
    assert plugin.api is plugin_api and plugin.api.settings["channel"] == "#vol"
    assert plugin.on_command("post-summary", {"hours": 3}) == {"posted": True}
    plugin_api.http.reply("GET", HOOK, json={"n": 1})
    assert plugin_api.http.get(HOOK).json() == {"n": 1}
''',
    "test_answers": '''
def test_test_answers(plugin_api):
    plugin_api.http.reply("GET", HOOK, text="one")
    plugin_api.http.reply("GET", HOOK, text="two")
    got = [plugin_api.http.get(HOOK + "?page=" + str(n)).text for n in range(3)]
    assert got == ["one", "two", "one"]  # in order, then the first again
    with pytest.raises(plugin_api.http.HttpError):
        plugin_api.http.post(HOOK)  # no answer for POST
    plugin_api.http.reply("PUT", HOOK, status=500, text="down")
    assert plugin_api.http.put(HOOK).status == 500
''',
    "test_records": '''
def test_test_records(plugin_api):
    plugin_api.http.reply("POST", HOOK, text="ok")
    plugin_api.http.reply("DELETE", HOOK, text="never asked")
    plugin_api.http.request("post", HOOK + "?week=3", params={"n": 3, "tags": ["a", "b"]},
                            headers={"X-A": "b"}, json={"hours": 12},
                            auth=plugin_api.secret("token"))
    plugin_api.http.post(HOOK, data={"form": "yes"})
    sent, form = plugin_api.http.requests
    assert (sent.method, sent.url) == ("POST", HOOK + "?week=3")
    assert sent.params == {"n": "3", "tags": ["a", "b"]} and sent.headers == {"X-A": "b"}
    assert sent.json == {"hours": 12} and sent.auth == {"secret": "token"}
    assert form.data == {"form": "yes"} and form.json is None
    assert plugin_api.http.unused() == ["DELETE " + HOOK]
''',
}


@pytest.mark.slow
def test_every_fact_the_model_is_told_holds_for_the_real_classes() -> None:
    assert set(CHECKS) == {fact.key for fact in FACTS}, "a fact without a check, or the reverse"
    tests = "\n".join(["import pytest", "", "from volunteer_hours.plugin import Plugin", "",
                       f"HOOK = {HOOK!r}", "", *CHECKS.values()])
    files = {**scaffold_files(spec_from_dict(SPEC)), "volunteer_hours/plugin.py": PLUGIN,
             "tests/test_facts.py": tests}
    report = run_pytest(files, limits=Limits(timeout_s=60), test_paths=["tests/test_facts.py"])
    found = {o.nodeid.split("::")[-1]: (o.outcome, o.message) for o in report.outcomes}
    assert found == {f"test_{key}": ("passed", "") for key in CHECKS}


def test_the_contract_states_each_fact_that_applies_once() -> None:
    spec = spec_from_dict(SPEC)
    contract = build_messages("implementer", PromptContext(spec=spec, iteration=1))[0].content
    for line in host_api_lines(spec):
        assert contract.count(line.strip()) == 1, line
    assert "reaches only these hosts: hooks.slack.com;" in contract
    assert "Settings the team enters: channel." in contract and "Secrets: token," in contract
    plain = spec_from_dict({**SPEC, "services": {"hosts": ["hooks.slack.com"],
                                                 "storage": False, "settings": []},
                            "commands": [{"name": "post-summary", "examples": [
                                {"input": {"hours": 12}, "output": {"posted": True},
                                 "http": [{"method": "POST", "url": HOOK, "text": "ok"}]}]}]})
    lines = "\n".join(host_api_lines(plain))
    assert "Secrets:" not in lines and "api.storage" not in lines and "Settings" not in lines
    assert "plugin_api.http.requests[i]" in lines
    # The roles that neither write tests nor explain their failures are told less of them.
    assert "plugin_api.http.requests[i]" not in "\n".join(host_api_lines(plain,
                                                                        harness="fixture"))
    assert "plugin_api" not in "\n".join(host_api_lines(plain, harness="none"))