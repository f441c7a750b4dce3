"""The plugins' test harness (autocoder/sandbox/plugin_testing.py) in the real sandbox: a
plugin's tests get `plugin_api`, the api of a real call whose api.http answers from the test's
answers, checks hosts and secrets as the host does, and never reaches a network."""

from __future__ import annotations

from typing import Any

import pytest

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
GOOD = f'''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        answer = self.api.http.post("{HOOK}", auth=self.api.secret("token"), json={{
            "text": f"{{payload['hours']}} hours", "channel": self.api.settings["channel"]}})
        answer.raise_for_status()
        self.api.storage["last"] = payload["hours"]
        return {{"posted": answer.text == "ok"}}
'''
LIMITS = Limits(timeout_s=60)


def outcomes(files: dict[str, Any]) -> dict[str, tuple[str, str]]:
    report = run_pytest(files, limits=LIMITS)
    return {o.nodeid.split("::")[-1]: (o.outcome, o.message) for o in report.outcomes}


def plugin_files(code: str, extra_tests: str = "") -> dict[str, Any]:
    files = {**scaffold_files(spec_from_dict(SPEC)), "volunteer_hours/plugin.py": code}
    if extra_tests:
        files["tests/test_generated_more.py"] = (
            "import pytest\nfrom volunteer_hours.plugin import Plugin\n\n" + extra_tests)
    return files


@pytest.mark.usefixtures("on_each_backend")
def test_a_plugin_that_posts_passes_its_acceptance_test_without_a_network() -> None:
    found = outcomes(plugin_files(GOOD, extra_tests='''
def test_what_was_sent(plugin_api):
    plugin_api.configure(settings={"channel": "#x"})
    plugin_api.http.reply("POST", "HOOK", status=500, text="down")
    plugin = Plugin()
    plugin.on_initialize(plugin_api)
    with pytest.raises(plugin_api.http.HttpError):
        plugin.on_command("post-summary", {"hours": 3})
    sent = plugin_api.http.requests[0]
    assert sent.json == {"text": "3 hours", "channel": "#x"}
    assert sent.auth == {"secret": "token"}
    assert "last" not in plugin_api.storage
'''.replace("HOOK", HOOK)))
    assert found == {"test_post_summary_example_1": ("passed", ""),
                     "test_what_was_sent": ("passed", "")}


def test_a_plugin_that_never_posts_fails_its_acceptance_test() -> None:
    lazy = ("class Plugin:\n    def on_initialize(self, api):\n        pass\n"
            "    def on_command(self, name, payload):\n        return {'posted': True}\n")
    outcome, message = outcomes(plugin_files(lazy))["test_post_summary_example_1"]
    assert outcome == "failed"
    assert "the plugin did not make these requests" in message


@pytest.mark.parametrize("body, words", [
    ('plugin_api.http.get("https://evil.example.com/x")',
     "evil.example.com is not one of the hosts plugin.toml declares"),
    (f'plugin_api.http.get("{HOOK}", auth=plugin_api.secret("password"))',
     "api.secret('password') is not a secret setting"),
    (f'plugin_api.http.get("{HOOK}")', "the test gave no answer for GET " + HOOK),
    ('plugin_api.settings["token"]', "'token' is a secret setting"),
    ('__import__("socket").create_connection(("hooks.slack.com", 443), timeout=2)', ""),
])
def test_the_harness_refuses_as_the_host_does(body: str, words: str) -> None:
    found = outcomes(plugin_files(GOOD, extra_tests=f"""
def test_refused(plugin_api):
    {body}
"""))
    outcome, message = found["test_refused"]
    assert outcome == "failed", message
    assert words in message


def test_a_secret_value_cannot_be_given_to_a_test() -> None:
    outcome, message = outcomes(plugin_files(GOOD, extra_tests="""
def test_secret(plugin_api):
    plugin_api.configure(settings={"token": "xoxb-real"})
"""))["test_secret"]
    assert outcome == "failed" and "['token'] are secret settings" in message


def test_the_harness_reads_the_hosts_by_the_hosts_own_rule() -> None:
    """plugin.toml's hosts as the portal reads them (autocoder/plugins/hosts.py, shipped into
    the sandbox): a scheme or name in capitals, an international name in either of its forms,
    an IPv6 address with its port; another port is another host."""
    files = plugin_files(GOOD, extra_tests="""
def test_reached(plugin_api):
    for url in ("https://shop.example.com/x", "https://xn--bcher-kva.example/y",
                "https://bücher.example/z", "https://[fd00::5]:8443/v"):
        plugin_api.http.reply("GET", url, text="ok")
        assert plugin_api.http.get(url).text == "ok"
    assert len(plugin_api.http.requests) == 4


def test_other_port(plugin_api):
    plugin_api.http.get("https://shop.example.com:8443/x")
""")
    files["plugin.toml"] = files["plugin.toml"].replace(
        'hosts = ["hooks.slack.com"]',
        'hosts = ["hooks.slack.com", "HTTPS://Shop.Example.COM", "bücher.example",'
        ' "[fd00::5]:8443"]')
    found = outcomes(files)
    assert found["test_reached"] == ("passed", "")
    outcome, message = found["test_other_port"]
    assert outcome == "failed"
    assert "shop.example.com is not one of the hosts plugin.toml declares" in message
