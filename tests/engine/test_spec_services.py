"""A spec's `services`: the hosts, settings and storage a plugin needs, and the answers the
services give in its examples (autocoder/engine/spec_services.py); the scaffold turns them into
plugin.toml and into acceptance tests that run without any network."""

from __future__ import annotations

import copy
import tomllib
from typing import Any

import pytest

from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.scaffold import plugin_toml, scaffold_files
from autocoder.engine.spec import Spec, SpecError, spec_from_dict

HOOK = "https://hooks.slack.com/services/T1/B2"


def chat_spec() -> dict[str, Any]:
    return {
        "name": "volunteer-hours",
        "summary": "Posts last week's volunteer hours to the team chat.",
        "services": {
            "hosts": ["hooks.slack.com"],
            "settings": [{"name": "channel", "description": "The chat channel"},
                         {"name": "token", "description": "The chat's token", "secret": True}],
            "storage": True,
        },
        "commands": [{"name": "post-summary", "description": "Post the hours.", "examples": [
            {"input": {"hours": 12}, "output": {"posted": True},
             "settings": {"channel": "#volunteers"},
             "http": [{"method": "post", "url": HOOK, "text": "ok"}]}]}],
    }


def messages(spec: Spec) -> tuple[str, str]:
    system, user = build_messages("implementer", PromptContext(spec=spec, iteration=1))
    return system.content, user.content


def errors_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        spec_from_dict(data)
    return caught.value.errors


def test_services_round_trip_and_an_old_spec_reads_as_it_did() -> None:
    spec = spec_from_dict(chat_spec())
    assert [rule.text() for rule in spec.services.hosts] == ["hooks.slack.com"]
    assert spec.services.secret_names == ("token",)
    assert spec.services.storage is True
    example = spec.commands[0].examples[0]
    assert example.http[0]["method"] == "POST" and example.http[0]["status"] == 200
    assert spec_from_dict(spec.as_dict()) == spec
    plain = chat_spec()
    del plain["services"]
    for example in plain["commands"][0]["examples"]:
        example.pop("http"), example.pop("settings")
    assert "services" not in spec_from_dict(plain).as_dict()
    assert not spec_from_dict(plain).services


@pytest.mark.parametrize("change, expected", [
    (lambda d: d["services"].update(hosts=["hooks.slack.com/path"]),
     "services.hosts[0]: "),
    (lambda d: d["services"].update(hosts="hooks.slack.com"), "services.hosts: must be a list"),
    (lambda d: d["services"]["settings"].append({"name": "2x", "description": "x"}),
     "services.settings[2].name: must be letters"),
    (lambda d: d["services"]["settings"].append({"name": "channel", "description": "again"}),
     "services.settings[2].name: 'channel' is named twice"),
    (lambda d: d["services"]["settings"][0].update(description=""),
     "services.settings[0].description: say what the team should enter"),
    (lambda d: d["services"].update(storage="yes"), "services.storage: must be true or false"),
    (lambda d: d["services"].update(proxy=True), "services.proxy: unknown field"),
    (lambda d: d["commands"][0]["examples"][0]["http"][0].update(url="https://evil.example/x"),
     "commands[0].examples[0].http[0].url: evil.example is not one of services.hosts"),
    (lambda d: d["commands"][0]["examples"][0]["http"][0].update(url="http://hooks.slack.com/"),
     "commands[0].examples[0].http[0].url: hooks.slack.com is not one of services.hosts"),
    (lambda d: d["commands"][0]["examples"][0]["http"][0].update(status=700),
     "commands[0].examples[0].http[0].status: an HTTP status"),
    (lambda d: d["commands"][0]["examples"][0]["settings"].update(token="xoxb-1"),
     "commands[0].examples[0].settings.token: a secret has no value in an example"),
    (lambda d: d["commands"][0]["examples"][0]["settings"].update(colour="red"),
     "commands[0].examples[0].settings.colour: not a setting of services.settings"),
])
def test_each_problem_is_named_in_words(change: Any, expected: str) -> None:
    data = copy.deepcopy(chat_spec())
    change(data)
    assert any(error.startswith(expected) for error in errors_of(data)), errors_of(data)


def test_the_manifest_declares_the_hosts_and_settings() -> None:
    manifest = tomllib.loads(plugin_toml(spec_from_dict(chat_spec())))
    assert manifest["permissions"]["hosts"] == ["hooks.slack.com"]
    assert manifest["permissions"]["network"] is False
    assert [(s["name"], s["secret"]) for s in manifest["settings"]] == [
        ("channel", False), ("token", True)]


def test_the_acceptance_tests_use_the_harness_and_the_readme_says_where_it_sends() -> None:
    files = scaffold_files(spec_from_dict(chat_spec()))
    tests = files["tests/test_acceptance.py"]
    assert "def test_post_summary_example_1(plugin_api):" in tests
    assert "plugin_api.http.reply(**answer)" in tests
    assert "plugin_api.http.unused() == []" in tests
    assert "It sends requests to hooks.slack.com" in files["README.md"]
    assert "`token` (secret)" in files["README.md"]


def test_the_model_is_told_how_to_reach_the_services_and_how_to_test_them() -> None:
    spec = spec_from_dict(chat_spec())
    system, request = messages(spec)
    assert "reaches only these hosts: hooks.slack.com" in system
    assert "Secrets: token" in system and 'auth=api.secret("name")' in system
    assert "`plugin_api` fixture" in system and "`api.storage`" in system
    assert "expects the request POST " + HOOK in request
    assert 'with settings {"channel": "#volunteers"}' in request
    plain = chat_spec()
    del plain["services"]
    plain["commands"][0]["examples"][0] = {"input": {"hours": 1}, "output": {"posted": True}}
    system, _ = messages(spec_from_dict(plain))
    assert "talks to no other service" in system and "plugin_api" not in system
