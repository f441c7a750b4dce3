"""pytest plugin copied into the workdir: writes each test's outcome as JSON (stdlib only).

Its source is shipped as a file next to the job's files and loaded with `-p`, so it runs
inside the sandbox with the job's own interpreter.

When the quality pipeline asks (COMMANDS_ENV names the plugin's entry class), it also records
which commands the tests call through the class's `on_command`, whatever way a test reaches it
(a fixture, a parametrized name, a helper), for the coverage stage (docs/engine.md, "The
quality pipeline").
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
from typing import Any

REPORT_PATH = os.path.join(".autocoder", "pytest-report.json")
COMMANDS_ENV = "AUTOCODER_RECORD_COMMANDS"
COMMANDS_PATH = os.path.join(".autocoder", "commands-called.json")
MAX_MESSAGE = 2000
MAX_COMMANDS = 500
_outcomes: dict[str, dict[str, str]] = {}  # nodeid -> outcome record
_called: set[str] = set()
_recording: dict[str, Any] = {"recorded": False, "why": "the tests were not collected"}


def _message(report: Any) -> str:
    text = getattr(report, "longreprtext", "") or ""
    if report.skipped and isinstance(report.longrepr, tuple):
        text = str(report.longrepr[2])
    return text[-MAX_MESSAGE:]


def pytest_runtest_logreport(report: Any) -> None:
    nodeid = report.nodeid
    if report.when == "call" or (report.when == "setup" and not report.passed):
        outcome = report.outcome if report.when == "call" else (
            "skipped" if report.skipped else "error")
        if report.when == "call" and getattr(report, "wasxfail", None) is not None:
            outcome = "skipped"
        _outcomes[nodeid] = {"nodeid": nodeid, "outcome": outcome, "message": _message(report)}
    elif report.when == "teardown" and report.failed:
        _outcomes[nodeid] = {"nodeid": nodeid, "outcome": "error",
                             "message": "teardown failed: " + _message(report)}


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        nodeid = report.nodeid or "<collection>"
        _outcomes[nodeid] = {"nodeid": nodeid, "outcome": "error",
                             "message": "collection failed: " + _message(report)}


def pytest_collection_finish(session: Any) -> None:
    entry = os.environ.get(COMMANDS_ENV)
    if entry:
        _record_commands(entry)


def _record_commands(entry: str) -> None:
    """Wrap the entry class's `on_command` so each call's command name is noted; the test
    modules were imported by now, so they hold the class itself and see the wrapper."""
    module_name, _, attr = entry.partition(":")
    try:
        target = getattr(importlib.import_module(module_name), attr)
        original = inspect.getattr_static(target, "on_command")
    except Exception as exc:  # the tests' own run reports what is wrong with the plugin
        _recording.update(why=f"{entry} could not be loaded: {type(exc).__name__}")
        return
    if not inspect.isfunction(original):
        _recording.update(why="on_command is not a plain method")
        return
    parameters = list(inspect.signature(original).parameters)
    keyword = parameters[1] if len(parameters) > 1 else ""

    @functools.wraps(original)
    def on_command(self: Any, *args: Any, **kwargs: Any) -> Any:
        name = args[0] if args else kwargs.get(keyword)
        if isinstance(name, str) and len(_called) < MAX_COMMANDS:
            _called.add(name[:100])
        return original(self, *args, **kwargs)

    target.on_command = on_command
    _recording.update(recorded=True, why="")


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    os.makedirs(os.path.dirname(REPORT_PATH), exist_ok=True)
    with open(REPORT_PATH, "w", encoding="utf-8") as handle:
        json.dump({"exitstatus": int(exitstatus), "outcomes": list(_outcomes.values())}, handle)
    if os.environ.get(COMMANDS_ENV):
        with open(COMMANDS_PATH, "w", encoding="utf-8") as handle:
            json.dump({**_recording, "called": sorted(_called)}, handle)
