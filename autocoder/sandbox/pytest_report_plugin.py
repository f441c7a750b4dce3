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
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import sys
from typing import Any

REPORT_PATH = os.path.join(".autocoder", "pytest-report.json")
COMMANDS_ENV = "AUTOCODER_RECORD_COMMANDS"
COMMANDS_PATH = os.path.join(".autocoder", "commands-called.json")
MAX_MESSAGE = 2000
MAX_COMMANDS = 500
_outcomes: dict[str, dict[str, str]] = {}  # nodeid -> outcome record
_called: set[str] = set()
_recording: dict[str, bool | str] = {"recorded": False, "why": "not asked"}


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


class _WrapOnImport(importlib.abc.MetaPathFinder):
    """Wraps the entry class's `on_command` the moment its module has run, whoever imports it
    (a test module, a conftest, a fixture, a test's body): no call is missed, and nothing is
    imported that the tests would not import themselves, so the line coverage stays theirs."""

    def __init__(self, module: str, attr: str) -> None:
        self.module, self.attr = module, attr

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.module:
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            _wrap(getattr(module, self.attr, None))

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _wrap(target: Any) -> None:
    """Note each call's command name, then call the plugin's own method."""
    original = inspect.getattr_static(target, "on_command", None) if target is not None else None
    if not inspect.isfunction(original):
        _recording.update(recorded=False, why="the entry has no plain on_command method")
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


def _start_recording() -> None:
    """Watch for the entry's module from the start (before any conftest is loaded); until it
    is imported, no test has called a command."""
    module, _, attr = os.environ.get(COMMANDS_ENV, "").partition(":")
    if not module or not attr:
        return
    _recording.update(recorded=True, why="")
    if module in sys.modules:
        _wrap(getattr(sys.modules[module], attr, None))
    else:
        sys.meta_path.insert(0, _WrapOnImport(module, attr))


_start_recording()


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    os.makedirs(os.path.dirname(REPORT_PATH), exist_ok=True)
    with open(REPORT_PATH, "w", encoding="utf-8") as handle:
        json.dump({"exitstatus": int(exitstatus), "outcomes": list(_outcomes.values())}, handle)
    if os.environ.get(COMMANDS_ENV):
        with open(COMMANDS_PATH, "w", encoding="utf-8") as handle:
            json.dump({**_recording, "called": sorted(_called)}, handle)
