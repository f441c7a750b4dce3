"""pytest plugin copied into the workdir: writes each test's outcome as JSON (stdlib only).

Its source is shipped as a file next to the job's files and loaded with `-p`, so it runs
inside the sandbox with the job's own interpreter.
"""

from __future__ import annotations

import json
import os
from typing import Any

REPORT_PATH = os.path.join(".autocoder", "pytest-report.json")
MAX_MESSAGE = 2000
_outcomes: dict[str, dict[str, str]] = {}  # nodeid -> outcome record


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


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    os.makedirs(os.path.dirname(REPORT_PATH), exist_ok=True)
    with open(REPORT_PATH, "w", encoding="utf-8") as handle:
        json.dump({"exitstatus": int(exitstatus), "outcomes": list(_outcomes.values())}, handle)
