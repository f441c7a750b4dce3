"""The driver's raw results (driver.py, in the sandbox) read into the stages a reviewer sees
(docs/engine.md, "The quality pipeline"). Nothing the job hands back is trusted to be well
formed: a missing or odd part is a finding, never an exception."""

from __future__ import annotations

import ast
import math
import re
from typing import TYPE_CHECKING

from autocoder.plugins.manifest import PluginManifest
from autocoder.plugins.names import package_name
from autocoder.quality.docs_check import README
from autocoder.quality.report import Finding, StageDetail, StageResult
from autocoder.quality.rules import COMPLEXITY_RULE, MAX_COMPLEXITY
from autocoder.quality.strategies import Strategy
from autocoder.sandbox.pytest_runner import TestReport, error_line

if TYPE_CHECKING:  # driver.py runs in the sandbox; its types describe what it writes
    from autocoder.quality.driver import (
        MypyOutput,
        PerformanceOutput,
        ReadmeRun,
        RuffOutput,
        TestsOutput,
    )

GROWTH_LIMIT = 1.5  # a command whose time grows as n^1.5 or faster is flagged
MEASURABLE_S = 0.01  # the larger run of the pair must take at least this to be judged
SLOW_EXAMPLE_S = 2.0  # an example that takes longer than this is flagged
_MYPY_LINE = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+):(?:\d+:)?\s*error:\s*(?P<msg>.*)$",
                        re.M)


def tests_stage(report: TestReport, seconds: float) -> StageResult:
    findings = [Finding(f"{o.outcome}: " + (o.message.splitlines()[0] if o.nodeid == "<session>"
                                            and o.message else error_line(o.message))[:500],
                        o.nodeid)
                for o in report.outcomes if o.outcome in ("failed", "error")]
    decided = report.passed + report.failed + report.errors
    passed = decided > 0 and report.pass_rate == 1.0 and not findings
    if decided == 0 and not findings:
        findings.append(Finding("no test ran", "tests"))
    return StageResult("tests", passed, findings, seconds,
                       {"passed": report.passed, "failed": report.failed,
                        "errors": report.errors, "pass_rate": report.pass_rate})


def lint_stages(raw: RuffOutput | None, seconds: float) -> tuple[StageResult, StageResult]:
    listed = raw.get("findings") if raw else None
    if listed is None:
        why = (raw.get("error") if raw else None) or "ruff did not run"
        problem = [Finding(f"the linter could not run: {why}"[:500])]
        return (StageResult("lint", False, problem, seconds),
                StageResult("complexity", False, list(problem), 0.0))
    lint, complexity = [], []
    for item in listed:
        where = f"{item.get('filename', '')}:{item.get('row', 0)}"
        code = str(item.get("code") or "syntax")
        if code == COMPLEXITY_RULE:
            complexity.append(Finding(f"{item.get('message', '')} (the bound is "
                                      f"{MAX_COMPLEXITY}): split it into smaller functions",
                                      where))
        else:
            lint.append(Finding(f"{code} {item.get('message', '')}", where))
    return (StageResult("lint", not lint, lint, seconds),
            StageResult("complexity", not complexity, complexity, 0.0,
                        {"bound": MAX_COMPLEXITY}))


def types_stage(raw: MypyOutput | None, seconds: float) -> StageResult:
    if not raw:
        return StageResult("types", False, [Finding("the type checker did not run")], seconds)
    if raw.get("timed_out"):
        return StageResult("types", False, [Finding("the type checker ran out of time")],
                           seconds)
    output = str(raw.get("output", ""))
    findings = [Finding(m["msg"].strip(), f"{m['path']}:{m['line']}")
                for m in _MYPY_LINE.finditer(output)]
    if not findings and raw.get("exit_code") not in (0, None):
        said = (output + str(raw.get("stderr", "")))[-400:]
        findings.append(Finding(f"the type checker failed: {said}"))
    return StageResult("types", not findings, findings[:100], seconds)


def coverage_stage(raw: TestsOutput, files: dict[str, str | bytes],
                   manifest: PluginManifest | None, package: str, rule: Strategy,
                   seconds: float) -> StageResult:
    data = raw.get("coverage")
    commands = list(manifest.commands) if manifest else []
    if not isinstance(data, dict):
        return StageResult("coverage", False, [Finding(
            "no coverage was measured (the tests did not run under coverage: "
            f"{str(raw.get('coverage_error', 'no data'))[:300]})")], seconds,
            {"line_rate": 0.0, "commands": len(commands),
             "uncovered_commands": [c.name for c in commands]})
    totals = data.get("totals", {})
    statements = int(totals.get("num_statements", 0))
    line_rate = int(totals.get("covered_lines", 0)) / statements if statements else 0.0
    branches = int(totals.get("num_branches", 0))
    branch_rate = int(totals.get("covered_branches", 0)) / branches if branches else 1.0
    executed = {name: set(info.get("executed_lines", []))
                for name, info in data.get("files", {}).items()}
    uncovered = commands_not_run([c.name for c in commands], called=calls_recorded(raw),
                                 files=files, executed=executed, package=package)
    findings = [Finding(f"no test runs the command `{name}`: add tests for it", name)
                for name in uncovered]
    if line_rate < rule.coverage_min:
        findings.append(Finding(f"the tests run {line_rate:.0%} of the plugin's lines; the "
                                f"{rule.key} strategy asks for {rule.coverage_min:.0%}", package))
    missing = sorted((name, info.get("missing_lines", []))
                     for name, info in data.get("files", {}).items() if info.get("missing_lines"))
    detail: StageDetail = {"line_rate": round(line_rate, 4), "branch_rate": round(branch_rate, 4),
              "coverage_min": rule.coverage_min, "commands": len(commands),
              "uncovered_commands": uncovered,
              "missing_lines": {name: lines[:50] for name, lines in missing}}
    return StageResult("coverage", not findings, findings, seconds, detail)


def calls_recorded(raw: TestsOutput) -> set[str] | None:
    """The command names the tests called through the plugin's `on_command`, as their own
    process noted them (pytest_report_plugin.py); None when they could not be noted."""
    noted = raw.get("commands_called")
    if not isinstance(noted, dict) or noted.get("recorded") is not True:
        return None
    called = noted.get("called")
    if not isinstance(called, list):
        return None
    return {name for name in called if isinstance(name, str)}


def commands_not_run(commands: list[str], *, called: set[str] | None,
                     files: dict[str, str | bytes], executed: dict[str, set[int]],
                     package: str) -> list[str]:
    """The commands no test runs. A test runs a command when it calls it through
    `on_command` (in any way: the class itself, a fixture, a parametrized name), or when the
    command's handler method ran (`count-words` -> `count_words`, called by a test itself).
    When the calls could not be noted (the entry has no plain `on_command` method), a command
    without a handler method counts as run when a test names it."""
    handlers = _handler_lines(files, package)
    tests = _test_strings(files)
    not_run = []
    for command in commands:
        if called is not None and command in called:
            continue
        handler = handlers.get(package_name(command))
        if handler is not None and any(lines & executed.get(path, set())
                                       for path, lines in handler.items()):
            continue
        if called is None and handler is None and command in tests:
            continue
        not_run.append(command)
    return not_run


def _handler_lines(files: dict[str, str | bytes],
                   package: str) -> dict[str, dict[str, set[int]]]:
    """Each handler-like function of the package (`count_words`, `_count_words`,
    `cmd_count_words`, `command_count_words`) by its command's method name: the lines of its
    body, by file."""
    found: dict[str, dict[str, set[int]]] = {}
    for path, content in files.items():
        if not (path.startswith(package + "/") and path.endswith(".py")):
            continue
        try:
            tree = ast.parse(_text(content))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = node.name.lstrip("_")
                for prefix in ("cmd_", "command_"):
                    name = name.removeprefix(prefix)
                lines = {n.lineno for s in node.body for n in ast.walk(s)
                         if isinstance(n, ast.stmt)}
                found.setdefault(name, {}).setdefault(path, set()).update(lines)
    return found


def _test_strings(files: dict[str, str | bytes]) -> set[str]:
    """Every string constant of the tests (a command named in a call, a parametrize list, a
    fixture); the whole text of a test file that does not parse."""
    found: set[str] = set()
    for path, content in files.items():
        if not (path.startswith("tests/") and path.endswith(".py")):
            continue
        text = _text(content)
        try:
            found |= {node.value for node in ast.walk(ast.parse(text))
                      if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        except SyntaxError:
            found |= set(re.findall(r"[\"']([^\"'\n]+)[\"']", text))
    return found


def _text(content: str | bytes) -> str:
    return content.decode("utf-8", "replace") if isinstance(content, bytes) else content


def growth(curve: list[list[float]]) -> float | None:
    """The exponent of time against input size over the curve's last measurable pair."""
    points = [(float(s), float(t)) for s, t in curve if t > 0]
    for (s1, t1), (s2, t2) in reversed(list(zip(points, points[1:], strict=False))):
        if t2 >= MEASURABLE_S and t1 >= 0.00002 and s2 > s1:
            return math.log(t2 / t1) / math.log(s2 / s1)
    return None


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms" if seconds < 1 else f"{seconds:.2f} s"


def performance_stage(raw: PerformanceOutput | None, seconds: float, limit_s: float,
                      commands: list[str]) -> StageResult:
    if not raw:
        return StageResult("performance", False, [Finding("the commands could not be timed")],
                           seconds)
    if raw.get("skipped"):
        return StageResult("performance", False, [Finding(f"not timed: {raw['skipped']}")],
                           seconds, {"commands_timed": 0, "flagged": []})
    findings, flagged, timed = [], [], 0
    entries = [e for e in raw.get("commands", []) if isinstance(e, dict)]
    for entry in entries:
        name = str(entry.get("command", ""))
        if entry.get("error"):
            findings.append(Finding(f"not timed: the command failed on its example "
                                    f"({entry['error'][:200]})", name))
            continue
        examples = [float(t) for t in entry.get("examples", [])]
        curve = entry.get("curve") or []
        if examples or curve:
            timed += 1
        slowest = max(examples, default=0.0)
        if slowest > SLOW_EXAMPLE_S:
            flagged.append(name)
            findings.append(Finding(f"takes {_ms(slowest)} on one of its own examples", name))
        exponent = growth(curve)
        if exponent is not None and exponent >= GROWTH_LIMIT and name not in flagged:
            flagged.append(name)
            shown = ", ".join(f"{int(s)}x {_ms(float(t))}" for s, t in curve)
            findings.append(Finding(
                f"its time grows faster than its input (about n^{exponent:.1f}): {shown}; "
                "look for a loop inside a loop, `in` on a list, or repeated string "
                "concatenation", name))
    if raw.get("timed_out"):
        done = {str(e.get("command")) for e in entries}
        unfinished = [str(c.get("command")) for c in entries if not c.get("curve")
                      and not c.get("error") and not c.get("examples")]
        unfinished += [name for name in commands if name not in done]
        name = unfinished[0] if unfinished else ""
        if name and name not in flagged:
            flagged.append(name)
        findings.append(Finding(f"the timing runs did not finish within {limit_s:.0f} s",
                                name))
    unloadable = raw.get("exit_code") not in (0, None) and not entries
    if unloadable:
        last = [line for line in str(raw.get("stderr", "")).splitlines() if line.strip()]
        findings.append(Finding("the plugin could not be loaded to time its commands: "
                                f"{last[-1] if last else 'it exited with an error'}"[:400]))
    curves = {str(e.get("command")): e.get("curve") for e in entries if e.get("curve")}
    passed = not flagged and not raw.get("timed_out") and not unloadable
    return StageResult("performance", passed, findings,
                       seconds, {"commands_timed": timed, "flagged": flagged,
                                 "examples_s": {str(e.get("command")): e.get("examples")
                                                for e in entries},
                                 **({"curves": curves} if curves else {})})


def docs_stage(findings: list[Finding], runs: list[ReadmeRun] | None,
               seconds: float) -> StageResult:
    found = list(findings)
    for run in runs or []:
        if run.get("timed_out"):
            found.append(Finding(f"the README's Python example {run.get('block')} did not "
                                 "finish in 10 s", README))
        elif run.get("exit_code") != 0:
            last = [line for line in str(run.get("stderr", "")).splitlines() if line.strip()]
            found.append(Finding(f"the README's Python example {run.get('block')} fails: "
                                 f"{last[-1] if last else 'it exited with an error'}"[:400],
                                 README))
    return StageResult("docs", not found, found, seconds,
                       {"examples_run": len(runs or [])})
