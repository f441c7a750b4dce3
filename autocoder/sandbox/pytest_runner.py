"""Run a plugin's tests in the sandbox and read back one outcome per test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from autocoder.runtime.storable import storable_loads
from autocoder.sandbox.runner import run
from autocoder.sandbox.types import DEFAULT_LIMITS, Limits, RunResult, RunResultDict
from autocoder.sandbox.workdir import RESERVED_DIR, safe_relpath

PLUGIN_MODULE = "_autocoder_pytest_report"
REPORT_FILE = f"{RESERVED_DIR}/pytest-report.json"
_PLUGIN_SOURCE = Path(__file__).with_name("pytest_report_plugin.py").read_text()
# The plugins' test harness (the `plugin_api` fixture) and the host's runner it builds on.
HARNESS_MODULE = "_autocoder_testing"
HOST_MODULE = "_autocoder_host"
_AUTOCODER = Path(__file__).parent.parent
# Files read as text and shipped into the sandbox (never imported here): the runner of a real
# call and its api.http client (autocoder/calling/), and the host's rule for `[permissions]
# hosts` and address settings (autocoder/plugins/hosts.py), so a test meets the host's rules.
_HARNESS_FILES: dict[str, str | bytes] = {
    f"{HARNESS_MODULE}.py": Path(__file__).with_name("plugin_testing.py").read_text(),
    f"{HOST_MODULE}.py": (_AUTOCODER / "calling" / "host_runner.py").read_text(),
    "_autocoder_http.py": (_AUTOCODER / "calling" / "plugin_http.py").read_text(),
    "_autocoder_hosts.py": (_AUTOCODER / "plugins" / "hosts.py").read_text(),
}
OUTCOMES = ("passed", "failed", "error", "skipped")
# pytest's exit statuses that mean "no test result to speak of"
_EXIT_MEANING = {2: "the test run was interrupted", 3: "pytest hit an internal error",
                 4: "pytest was called wrongly", 5: "no tests were collected"}


@dataclass
class TestOutcome:
    __test__ = False  # not a test class, whatever pytest thinks of the name

    nodeid: str
    outcome: str  # passed | failed | error | skipped
    message: str


class OutcomeDict(TypedDict):
    nodeid: str
    outcome: str
    message: str


class TestReportDict(TypedDict):
    """`TestReport.as_dict()`."""

    outcomes: list[OutcomeDict]
    passed: int
    failed: int
    errors: int
    skipped: int
    pass_rate: float
    run: RunResultDict


class StoredTestReport(TypedDict):
    """`TestReport.stored()`: what checkpoints and plugin versions keep."""

    outcomes: list[OutcomeDict]
    passed: int
    failed: int
    errors: int
    pass_rate: float
    exit_code: int | None
    timed_out: bool
    oom: bool
    killed_reason: str | None
    duration_ms: int
    backend: str
    output_tail: str


@dataclass
class TestReport:
    __test__ = False

    outcomes: list[TestOutcome]
    passed: int
    failed: int
    errors: int
    pass_rate: float
    run: RunResult

    def as_dict(self) -> TestReportDict:
        return {"outcomes": [_outcome(o, o.message) for o in self.outcomes],
                "passed": self.passed, "failed": self.failed, "errors": self.errors,
                "skipped": sum(1 for o in self.outcomes if o.outcome == "skipped"),
                "pass_rate": self.pass_rate, "run": self.run.as_dict()}

    def stored(self) -> StoredTestReport:
        """The compact shape kept on checkpoints and plugin versions (pages show both alike):
        messages and output trimmed, the run's outcome flattened."""
        result = self.run
        return {
            "outcomes": [_outcome(o, o.message[:4000]) for o in self.outcomes],
            "passed": self.passed, "failed": self.failed, "errors": self.errors,
            "pass_rate": self.pass_rate,
            "exit_code": result.exit_code, "timed_out": result.timed_out, "oom": result.oom,
            "killed_reason": result.killed_reason, "duration_ms": result.duration_ms,
            "backend": result.backend,
            "output_tail": (result.stdout or "")[-3000:] + (result.stderr or "")[-1000:],
        }


def _outcome(outcome: TestOutcome, message: str) -> OutcomeDict:
    return {"nodeid": outcome.nodeid, "outcome": outcome.outcome, "message": message}


def pytest_command(test_paths: list[str]) -> list[str]:
    # `python -m` puts the workdir on sys.path, so the plugin package and our report
    # plugin import from it; no cache directory is written, no plugin autoload from the venv.
    # Plugins installed in the venv (pytest-django, ...) are not autoloaded: a generated
    # plugin's tests must not depend on the portal's own test set-up, and start faster.
    return ["python", "-m", "pytest", "-q", "--disable-plugin-autoload",
            "-p", "no:cacheprovider", "-p", PLUGIN_MODULE, "-p", HARNESS_MODULE,
            "--rootdir", ".", "--color=no", "-o", "console_output_style=classic",
            *test_paths]


def run_pytest(
    files: dict[str, str | bytes], *, limits: Limits = DEFAULT_LIMITS,
    test_paths: list[str] | None = None, backend: str | None = None,
    cancel_check: Callable[[], bool] | None = None,
) -> TestReport:
    paths = test_paths or ["tests"]
    for path in paths:
        safe_relpath(path.split("::", 1)[0])
    reserved = [name for name in files
                if name.startswith(RESERVED_DIR + "/")
                or name in (f"{PLUGIN_MODULE}.py", *_HARNESS_FILES)]
    if reserved:
        raise ValueError(f"file names reserved for the test runner: {reserved}")
    job_files = {**files, f"{PLUGIN_MODULE}.py": _PLUGIN_SOURCE, **_HARNESS_FILES}
    result = run(job_files, pytest_command(paths), limits, backend=backend,
                 collect=[REPORT_FILE], cancel_check=cancel_check)
    return build_report(result)


def build_report(result: RunResult) -> TestReport:
    outcomes = _parse(result.files.get(REPORT_FILE))
    problem = _problem(result, outcomes)
    if problem:
        outcomes.append(TestOutcome("<session>", "error", problem))
    counts = {name: sum(1 for o in outcomes if o.outcome == name) for name in OUTCOMES}
    decided = counts["passed"] + counts["failed"] + counts["error"]
    broken = problem is not None or result.timed_out or result.killed_reason is not None
    pass_rate = 0.0 if broken or not decided else counts["passed"] / decided
    return TestReport(outcomes, counts["passed"], counts["failed"], counts["error"],
                      round(pass_rate, 4), result)


def error_line(message: str) -> str:
    """The line of a test's message that names the error: pytest's first `E` line (the
    exception and its words), else the message's last line."""
    lines = [line for line in message.splitlines() if line.strip()]
    marked = [line[1:].strip() for line in lines if line.startswith("E ")]
    return marked[0] if marked else (lines[-1].strip() if lines else "")


def _parse(raw: bytes | None) -> list[TestOutcome]:
    if not raw:
        return []
    try:
        data = storable_loads(raw)  # a test's message may quote NUL (PostgreSQL refuses it)
        items = data["outcomes"]
        return [TestOutcome(str(item["nodeid"]), item["outcome"], str(item["message"]))
                for item in items if item.get("outcome") in OUTCOMES]
    except (ValueError, KeyError, TypeError, AttributeError):
        return []


def _problem(result: RunResult, outcomes: list[TestOutcome]) -> str | None:
    """Why the run says nothing trustworthy about the tests, or None when it does."""
    tail = (result.stderr or result.stdout)[-1500:].strip()
    if result.killed_reason is not None and (result.exit_code is None or not outcomes):
        return f"the test run was stopped: {result.killed_reason}" + (
            f" after {result.duration_ms} ms" if result.timed_out else "") + (
            f"\n{tail}" if tail else "")
    if not outcomes and result.exit_code in _EXIT_MEANING:
        return f"{_EXIT_MEANING[result.exit_code]}\n{(result.stdout + result.stderr)[-1500:]}"
    if not outcomes:
        return f"no test report was written (exit code {result.exit_code})" + (
            f"\n{tail}" if tail else "")
    return None
