"""The test harness and address settings (issue 45): a system whose address nobody knew is
reached in the tests at the placeholder address the example gives its address setting, as the
admin's approval lets a real call reach the address entered (autocoder/sandbox/plugin_testing.py).
In the real sandbox, without a network."""

from __future__ import annotations

from typing import Any

import pytest

from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_dict
from autocoder.sandbox import Limits
from autocoder.sandbox.pytest_runner import run_pytest
from tests.engine.test_spec_systems import two_systems

GOOD = '''
class Plugin:
    def on_initialize(self, api):
        self.api = api

    def on_command(self, name, payload):
        base = self.api.settings["booking_address"]
        hours = self.api.http.get(base + "/hours", params={
            "from": payload["start"], "to": payload["end"]}).json()["hours"]
        sent = self.api.http.post("https://hooks.slack.com/services/T1/B2",
                                  json={"text": f"{hours} hours"}, auth=self.api.secret("token"))
        return {"posted": sent.text == "ok"}
'''


def outcomes(code: str, extra_tests: str = "") -> dict[str, tuple[str, str]]:
    files: dict[str, Any] = {**scaffold_files(spec_from_dict(two_systems())),
                             "volunteer_hours/plugin.py": code}
    if extra_tests:
        files["tests/test_generated_more.py"] = (
            "from volunteer_hours.plugin import Plugin\n\n" + extra_tests)
    report = run_pytest(files, limits=Limits(timeout_s=60))
    return {o.nodeid.split("::")[-1]: (o.outcome, o.message) for o in report.outcomes}


@pytest.mark.usefixtures("on_each_backend")
def test_the_recorded_answers_of_a_system_without_a_known_address_work() -> None:
    found = outcomes(GOOD, extra_tests='''
def test_what_the_booking_system_was_asked(plugin_api):
    plugin_api.configure(settings={"booking_address": "https://bookings.example.org/api"})
    plugin_api.http.reply("GET", "https://bookings.example.org/api/hours", json={"hours": 3})
    plugin_api.http.reply("POST", "https://hooks.slack.com/services/T1/B2", text="ok")
    plugin = Plugin()
    plugin.on_initialize(plugin_api)
    assert plugin.on_command("post-summary", {"start": "2027-03-22", "end": "2027-03-28"})
    asked = plugin_api.http.requests[0]
    assert asked.url.startswith("https://bookings.example.org/api/hours")
    assert asked.params == {"from": "2027-03-22", "to": "2027-03-28"}
''')
    assert found == {"test_post_summary_example_1": ("passed", ""),
                     "test_what_the_booking_system_was_asked": ("passed", "")}


def test_a_host_written_in_the_code_instead_of_the_setting_is_refused() -> None:
    hard_coded = GOOD.replace('base = self.api.settings["booking_address"]',
                              'base = "https://bookings.example.org"')
    outcome, message = outcomes(hard_coded)["test_post_summary_example_1"]
    assert outcome == "failed"
    assert ("bookings.example.org is not one of the hosts plugin.toml declares ([permissions]"
            " hosts), nor the address of an address setting") in message


def test_without_the_setting_configured_its_address_is_not_reachable() -> None:
    outcome, message = outcomes(GOOD, extra_tests='''
def test_unconfigured(plugin_api):
    plugin_api.http.get("https://our-booking-system.example/hours")
''')["test_unconfigured"]
    assert outcome == "failed"
    assert "our-booking-system.example is not one of the hosts plugin.toml declares" in message
