"""A spec's `services.systems`, address settings and `schedule` (issue 45; docs/engine.md, "Spec
format"): every other system in the requester's words, one without a known address recorded
without a host and with the address setting the team's admin enters; when the plugin runs by
itself and the period each run covers. The scaffold and the prompts pass them on."""

from __future__ import annotations

import copy
import tomllib
from typing import Any

import pytest

from autocoder.engine.scaffold import plugin_toml, scaffold_files
from autocoder.engine.spec import spec_from_dict
from autocoder.engine.spec_schedule import when_is_valid
from tests.engine.test_spec_services import HOOK, errors_of, messages

PLACEHOLDER = "https://our-booking-system.example"


def two_systems() -> dict[str, Any]:
    return {
        "name": "volunteer-hours",
        "summary": "Every Monday, posts last week's volunteer hours to the team chat.",
        "services": {
            "hosts": ["hooks.slack.com"],
            "settings": [
                {"name": "token", "description": "The chat's token", "secret": True},
                {"name": "booking_address", "description": "The booking system's address",
                 "kind": "address"}],
            "systems": [
                {"name": "our booking system", "does": "reads", "host": None,
                 "address_setting": "booking_address", "needs": []},
                {"name": "the team chat", "does": "sends", "host": "hooks.slack.com",
                 "address_setting": None, "needs": ["token"]}],
            "storage": False,
        },
        "schedule": {"words": "every Monday morning", "when": "weekly mon 08:00",
                     "command": "post-summary", "period": "last_week"},
        "commands": [{"name": "post-summary", "description": "Post the hours.", "examples": [
            {"input": {"start": "2027-03-22", "end": "2027-03-28"}, "output": {"posted": True},
             "settings": {"booking_address": PLACEHOLDER},
             "http": [{"method": "GET", "url": f"{PLACEHOLDER}/hours", "json": {"hours": 12}},
                      {"method": "POST", "url": HOOK, "text": "ok"}]}]}],
    }


def test_systems_and_a_schedule_round_trip_and_an_old_spec_reads_as_it_did() -> None:
    spec = spec_from_dict(two_systems())
    assert [(s.name, s.host.text() if s.host else None, s.address_setting)
            for s in spec.services.systems] == [
        ("our booking system", None, "booking_address"),
        ("the team chat", "hooks.slack.com", None)]
    assert [s.name for s in spec.services.address_settings] == ["booking_address"]
    assert spec.schedule is not None and spec.schedule.input_fields == ("start", "end")
    assert spec_from_dict(spec.as_dict()) == spec
    assert spec.as_dict()["services"]["systems"] == two_systems()["services"]["systems"]
    assert spec.testing_strategy == "comprehensive"

    older = two_systems()
    del older["services"]["systems"], older["schedule"]
    older["services"]["settings"].pop()
    older["commands"][0]["examples"][0]["http"].pop(0)
    del older["commands"][0]["examples"][0]["settings"]
    read = spec_from_dict(older).as_dict()
    assert "systems" not in read["services"] and "schedule" not in read
    assert read["services"]["settings"] == [
        {"name": "token", "description": "The chat's token", "secret": True}]


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: d["services"]["systems"][1].update(host="chat.example.org"),
     "services.systems[1].host: chat.example.org is not one of services.hosts"),
    (lambda d: d["services"]["systems"][0].update(address_setting=None),
     "services.systems[0]: give its host, or the address_setting"),
    (lambda d: d["services"]["systems"][1].update(address_setting="booking_address"),
     "services.systems[1]: give its host or an address_setting, not both"),
    (lambda d: d["services"]["systems"][0].update(address_setting="token"),
     "services.systems[0].address_setting: 'token' is not a setting of services.settings"
     ' with kind "address"'),
    (lambda d: d["services"]["systems"][1].update(needs=["channel"]),
     "services.systems[1].needs: 'channel' is not a setting"),
    (lambda d: d["services"]["systems"][0].update(does="writes"),
     "services.systems[0].does: one of reads, sends, both"),
    (lambda d: d["services"]["systems"][0].update(name=" "),
     "services.systems[0].name: say in words what the system is"),
    (lambda d: d["services"]["systems"][0].update(colour="red"),
     "services.systems[0].colour: unknown field"),
    (lambda d: d["services"].update(systems=[d["services"]["systems"][1]] * 21),
     "services.systems: at most 20"),
    (lambda d: d["services"]["settings"][1].update(kind="url"),
     'services.settings[1].kind: "address" or left out'),
    (lambda d: d["services"]["settings"][1].update(secret=True),
     "services.settings[1].secret: an address setting is never a secret"),
    (lambda d: d["commands"][0]["examples"][0].update(settings={"booking_address": "a b"}),
     "commands[0].examples[0].settings.booking_address: the address"),
    (lambda d: d["commands"][0]["examples"][0].update(settings={}),
     "commands[0].examples[0].http[0].url: our-booking-system.example is not one of"),
    (lambda d: d["schedule"].update(when="mondays at 8"),
     "schedule.when: 'mondays at 8' is not a rhythm"),
    (lambda d: d["schedule"].update(period="last_year"), "schedule.period: one of today"),
    (lambda d: d["schedule"].update(command="post"),
     "schedule.command: 'post' is not one of the spec's commands"),
    (lambda d: d["schedule"].update(when=None, words=""),
     "schedule: say when it runs, in `when` or at least in `words`"),
    (lambda d: d["schedule"].update(every="day"), "schedule.every: unknown field"),
])
def test_each_problem_is_named_in_words(change: Any, expected: str) -> None:
    data = copy.deepcopy(two_systems())
    change(data)
    assert any(error.startswith(expected) for error in errors_of(data)), errors_of(data)


def test_a_schedule_said_only_in_words_or_without_a_period() -> None:
    data = two_systems()
    data["schedule"] = {"words": "on the first Monday of each month", "when": None}
    spec = spec_from_dict(data)
    assert spec.schedule is not None
    assert (spec.schedule.when, spec.schedule.command, spec.schedule.input_fields) == (
        None, "post-summary", ())
    data["schedule"] = {"when": "daily 07:30", "period": "since_last_run"}
    assert spec_from_dict(data).schedule.input_fields == ("since",)  # type: ignore[union-attr]


@pytest.mark.parametrize(("when", "valid"), [
    ("every 15 minutes", True), ("every 2 hours", True), ("daily 07:30", True),
    ("weekly mon 08:00", True), ("weekly mon,thu 08:00", True), ("monthly 1 08:00", True),
    ("monthly last 08:00", True), ("monthly first-mon 08:00", True),
    ("weekly monday 08:00", False), ("daily 25:00", False), ("monthly 32 08:00", False),
    ("every 0 minutes", False), ("0 8 * * 1", False)])
def test_the_when_words_have_the_schedules_shape(when: str, valid: bool) -> None:
    assert when_is_valid(when) is valid


def test_plugin_toml_marks_the_address_setting_and_declares_only_the_known_host() -> None:
    manifest = tomllib.loads(plugin_toml(spec_from_dict(two_systems())))
    assert manifest["permissions"]["hosts"] == ["hooks.slack.com"]
    assert [(s["name"], s["secret"], s.get("kind")) for s in manifest["settings"]] == [
        ("token", True, None), ("booking_address", False, "address")]
    readme = scaffold_files(spec_from_dict(two_systems()))["README.md"]
    assert "It also reaches the address the team enters in `booking_address`" in readme


def test_the_model_takes_the_base_url_from_the_setting_and_the_period_from_the_input() -> None:
    system, _ = messages(spec_from_dict(two_systems()))
    assert ("reaches only these hosts: hooks.slack.com, and the addresses of the address"
            " settings below") in system
    assert '`api.settings["booking_address"]` holds a web address the team\'s admin enters' \
        in system
    assert "build every request to that system from it" in system
    assert "never write that system's host in the code" in system
    assert ("our booking system (reads from it, its address is the setting `booking_address`)"
            in system)
    assert "The command `post-summary` also runs by itself on a schedule: weekly mon 08:00" \
        in system
    assert "its input has `start` and `end`, ISO dates" in system
