"""A plugin's tests run in the real bwrap sandbox; outcomes come back per test."""

from __future__ import annotations

import pytest

from autocoder.sandbox import Limits
from autocoder.sandbox.pytest_runner import run_pytest

PLUGIN = {
    "weekly_scheduler/__init__.py": "",
    "weekly_scheduler/plugin.py": (
        "class Plugin:\n"
        "    def on_command(self, name, payload):\n"
        "        if name != 'add':\n"
        "            raise ValueError(name)\n"
        "        return {'sum': payload['a'] + payload['b']}\n"
    ),
}
TESTS = (
    "import pytest\nfrom weekly_scheduler.plugin import Plugin\n\n"
    "def test_add():\n    assert Plugin().on_command('add', {'a': 1, 'b': 2}) == {'sum': 3}\n\n"
    "def test_wrong_expectation():\n"
    "    assert Plugin().on_command('add', {'a': 1, 'b': 2}) == {'sum': 4}\n\n"
    "def test_unknown_command():\n    with pytest.raises(ValueError):\n"
    "        Plugin().on_command('nope', {})\n\n"
    "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture broke')\n\n"
    "def test_uses_broken_fixture(broken):\n    pass\n\n"
    "@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n\n"
    "class TestGrouped:\n    def test_in_class(self):\n        assert True\n"
)
LIMITS = Limits(timeout_s=30)


def test_outcomes_per_test_and_pass_rate(on_each_backend: str) -> None:
    report = run_pytest({**PLUGIN, "tests/test_plugin.py": TESTS}, limits=LIMITS)
    outcomes = {o.nodeid: o.outcome for o in report.outcomes}
    assert outcomes == {
        "tests/test_plugin.py::test_add": "passed",
        "tests/test_plugin.py::test_wrong_expectation": "failed",
        "tests/test_plugin.py::test_unknown_command": "passed",
        "tests/test_plugin.py::test_uses_broken_fixture": "error",
        "tests/test_plugin.py::test_later": "skipped",
        "tests/test_plugin.py::TestGrouped::test_in_class": "passed",
    }
    assert (report.passed, report.failed, report.errors) == (3, 1, 1)
    assert report.pass_rate == 0.6  # skipped tests do not count either way
    failed = next(o for o in report.outcomes if o.outcome == "failed")
    assert "{'sum': 3} == {'sum': 4}" in failed.message
    assert "fixture broke" in next(o for o in report.outcomes if o.outcome == "error").message
    assert report.run.exit_code == 1 and report.run.backend == on_each_backend


def test_all_passing_gives_full_pass_rate_and_a_json_ready_dict() -> None:
    tests = "from weekly_scheduler.plugin import Plugin\n\ndef test_ok():\n    assert Plugin()\n"
    report = run_pytest({**PLUGIN, "tests/test_ok.py": tests}, limits=LIMITS)
    assert report.pass_rate == 1.0
    data = report.as_dict()
    assert data["passed"] == 1 and data["outcomes"][0]["nodeid"] == "tests/test_ok.py::test_ok"
    assert "files" not in data["run"]


@pytest.mark.usefixtures("on_each_backend")
def test_collection_error_is_an_error_outcome_with_zero_pass_rate() -> None:
    report = run_pytest({"tests/test_broken.py": "import not_a_module\n\n"
                                                 "def test_x():\n    pass\n"}, limits=LIMITS)
    assert report.pass_rate == 0.0
    assert [o.outcome for o in report.outcomes] == ["error"]
    assert "No module named 'not_a_module'" in report.outcomes[0].message


@pytest.mark.usefixtures("on_each_backend")
def test_timeout_is_an_error_outcome_explaining_why() -> None:
    tests = "def test_forever():\n    while True:\n        pass\n"
    report = run_pytest({"tests/test_loop.py": tests}, limits=Limits(timeout_s=3))
    assert report.pass_rate == 0.0 and report.run.timed_out
    assert report.outcomes[-1].outcome == "error"
    assert "timeout" in report.outcomes[-1].message


def test_no_tests_is_an_error_not_a_pass() -> None:
    report = run_pytest({**PLUGIN, "tests/test_empty.py": "X = 1\n"}, limits=LIMITS)
    assert report.pass_rate == 0.0
    assert report.outcomes[-1].outcome == "error"
    assert "no tests were collected" in report.outcomes[-1].message


def test_selected_test_paths_only() -> None:
    files = {**PLUGIN, "tests/test_a.py": "def test_a():\n    pass\n",
             "tests/test_b.py": "def test_b():\n    assert False\n"}
    report = run_pytest(files, limits=LIMITS, test_paths=["tests/test_a.py"])
    assert [o.nodeid for o in report.outcomes] == ["tests/test_a.py::test_a"]


@pytest.mark.usefixtures("on_each_backend")
def test_tests_run_inside_the_sandbox() -> None:
    tests = ("import socket\n\ndef test_network():\n"
             "    socket.create_connection(('1.1.1.1', 80), timeout=1)\n")
    report = run_pytest({"tests/test_net.py": tests}, limits=LIMITS)
    assert report.failed == 1
    assert ("Network is unreachable" in report.outcomes[0].message
            or "No route to host" in report.outcomes[0].message)  # gVisor's words


def test_reserved_names_and_escaping_paths_are_refused() -> None:
    with pytest.raises(ValueError, match="reserved"):
        run_pytest({".autocoder/pytest-report.json": "{}"}, limits=LIMITS)
    with pytest.raises(ValueError):
        run_pytest(PLUGIN, limits=LIMITS, test_paths=["../elsewhere"])
