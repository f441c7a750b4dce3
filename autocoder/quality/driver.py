"""Runs INSIDE the sandbox, on the plugin runtime: every stage of the quality pipeline on one
candidate, in one job (docs/engine.md, "The quality pipeline").

pipeline.py ships this file as `.autocoder/quality_driver.py` with the job's plan in
`.autocoder/quality-job.json`; it writes `.autocoder/quality-result.json`. Standard library only
(the tools run as subprocesses: `python -m coverage`, `python -m ruff`, `python -m mypy`), so it
imports nothing the plugin could have shadowed before the plugin's own code runs. The plugin's
code runs only in child processes (the tests, the performance runs, the README's examples),
each with its own time budget, so a plugin that hangs cannot take the other stages with it.
The static stages (ruff, the safe fixes, mypy) run first, on the files as given, before any of
the plugin's code has had a chance to change them; the children get the plan on stdin and this
file's source from memory, so what a test writes into the workdir changes neither. What the
plugin's own processes measure (its tests' outcomes and coverage, its timings) is as
trustworthy as those processes: the sandbox protects the host, not the figures.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
import sys
import time
from typing import Any, TypedDict

JOB = ".autocoder/quality-job.json"
RESULT = ".autocoder/quality-result.json"
FIX_DIR = ".autocoder/fix"
# The test run's report plugin notes the commands the tests call (pytest_report_plugin.py).
COMMANDS_ENV = "AUTOCODER_RECORD_COMMANDS"
COMMANDS_CALLED = ".autocoder/commands-called.json"


PERF_MARK = "QUALITY-PERF "
# read once, at start (a child started with `-c` has no __file__ and needs none)
_SOURCE = open(__file__, encoding="utf-8").read() if "__file__" in globals() else ""  # noqa: SIM115


class Command(TypedDict):
    name: str
    examples: list[Any]  # the manifest's examples: {"input": ..., "output": ...}


class Job(TypedDict):
    """The plan pipeline.py writes to `.autocoder/quality-job.json`."""
    package: str
    entry: str
    pytest_argv: list[str]
    tests_timeout: float
    line_length: int
    ruff_select: list[str]
    ruff_ignore: list[str]
    max_complexity: int
    lint_paths: list[str]
    fix_paths: list[str]
    mypy_args: list[str]
    commands: list[Command]
    multipliers: list[int]
    perf_timeout: float
    readme_blocks: list[str]


class ProcessRun(TypedDict):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float


class CoverageFile(TypedDict):
    executed_lines: list[int]
    missing_lines: list[int]
    summary: dict[str, float]


class Coverage(TypedDict):
    totals: dict[str, float]  # coverage.py's own figures
    files: dict[str, CoverageFile]


class TestsOutput(TypedDict, total=False):
    run: ProcessRun
    commands_called: Any  # as the tests wrote it; the host checks its shape
    coverage: Coverage  # coverage.py's own JSON report, trimmed
    coverage_error: str


class RuffOutput(TypedDict):
    findings: list[dict[str, str | int]] | None
    error: str | None
    seconds: float


class AutofixOutput(TypedDict):
    fixed: dict[str, str]
    seconds: float


class MypyOutput(TypedDict):
    output: str
    exit_code: int | None
    stderr: str
    timed_out: bool
    seconds: float


class CommandTiming(TypedDict, total=False):
    command: str
    examples: list[float]
    curve: list[list[float]]
    error: str


class PerformanceOutput(TypedDict, total=False):
    commands: list[CommandTiming]
    skipped: str  # why nothing was timed
    timed_out: bool
    exit_code: int | None
    stderr: str


class ReadmeRun(TypedDict):
    block: int
    exit_code: int | None
    timed_out: bool
    stderr: str


class DriverResult(TypedDict, total=False):
    """What the job writes to `.autocoder/quality-result.json`, stage by stage."""
    seconds: dict[str, float]
    ruff: RuffOutput
    autofix: AutofixOutput
    mypy: MypyOutput
    tests: TestsOutput
    performance: PerformanceOutput
    readme: list[ReadmeRun]


def _run(argv: list[str], timeout: float, given: str | None = None,
         env: dict[str, str] | None = None) -> ProcessRun:
    started = time.perf_counter()
    out: ProcessRun
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=max(timeout, 1),
                              errors="replace", input=given, env=env)
        out = {"exit_code": done.returncode, "stdout": done.stdout[-200_000:],
               "stderr": done.stderr[-50_000:], "timed_out": False, "seconds": 0.0}
    except subprocess.TimeoutExpired as exc:
        out = {"exit_code": None, "timed_out": True, "seconds": 0.0,
               "stdout": _text(exc.stdout)[-200_000:], "stderr": _text(exc.stderr)[-50_000:]}
    except OSError as exc:
        out = {"exit_code": None, "timed_out": False, "stdout": "", "stderr": str(exc),
               "seconds": 0.0}
    out["seconds"] = round(time.perf_counter() - started, 3)
    return out


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value or ""


def tests(job: Job) -> TestsOutput:
    data = ".autocoder/coverage.data"
    rc = ".autocoder/coveragerc"
    # Our own configuration only: a plugin's .coveragerc or pragmas cannot hide lines.
    with open(rc, "w", encoding="utf-8") as handle:
        handle.write("[run]\nbranch = True\n[report]\nexclude_lines =\n"
                     "    __autocoder_never_excluded__\n")
    run = _run([sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", f"--data-file={data}",
                f"--source={job['package']}", *job["pytest_argv"]], job["tests_timeout"],
               env={**os.environ, COMMANDS_ENV: job["entry"]})
    report: TestsOutput = {"run": run, "commands_called": _commands_called()}
    if os.path.exists(data):
        done = _run([sys.executable, "-m", "coverage", "json", f"--rcfile={rc}",
                     f"--data-file={data}", "-o", ".autocoder/coverage.json", "-q"], 20)
        try:
            with open(".autocoder/coverage.json", encoding="utf-8") as handle:
                raw = json.load(handle)
            report["coverage"] = {
                "totals": raw.get("totals", {}),
                "files": {name: {"executed_lines": info.get("executed_lines", []),
                                 "missing_lines": info.get("missing_lines", []),
                                 "summary": info.get("summary", {})}
                          for name, info in raw.get("files", {}).items()}}
        except (OSError, ValueError):
            report["coverage_error"] = done["stderr"][-2000:] or "no coverage report"
    return report


def _commands_called() -> Any:
    """What the tests' own process noted of their on_command calls (None when nothing was
    written); the host checks its shape."""
    try:
        if os.path.getsize(COMMANDS_CALLED) > 100_000:
            return None
        with open(COMMANDS_CALLED, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def ruff(job: Job) -> RuffOutput:
    # --ignore-noqa: the plugin's own noqa comments do not silence the reviewed rule set
    argv = [sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--ignore-noqa",
            "--output-format", "json", "--line-length", str(job["line_length"]),
            "--select", ",".join(job["ruff_select"]),
            "--config", f"lint.mccabe.max-complexity={job['max_complexity']}",
            *job["lint_paths"]]
    if job["ruff_ignore"]:
        argv[argv.index("--select"):argv.index("--select")] = [
            "--ignore", ",".join(job["ruff_ignore"])]
    done = _run(argv, 30)
    try:
        findings = [{"code": item.get("code") or "", "message": item.get("message", ""),
                     "filename": os.path.relpath(item.get("filename", ""), os.getcwd()),
                     "row": (item.get("location") or {}).get("row", 0)}
                    for item in json.loads(done["stdout"] or "[]")][:300]
    except (ValueError, TypeError, AttributeError):
        findings = None
    return {"findings": findings, "error": None if findings is not None else done["stderr"][-2000:],
            "seconds": done["seconds"]}


def autofix(job: Job) -> AutofixOutput:
    """Import order and formatting on a copy of the package; the files that changed."""
    started = time.perf_counter()
    shutil.rmtree(FIX_DIR, ignore_errors=True)
    originals: dict[str, str] = {}
    for path in job["fix_paths"]:
        target = os.path.join(FIX_DIR, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(path, encoding="utf-8") as handle:
            originals[path] = handle.read()
        with open(target, "w", encoding="utf-8") as handle:
            handle.write(originals[path])
    fixed: dict[str, str] = {}
    if originals:
        length = str(job["line_length"])
        _run([sys.executable, "-m", "ruff", "check", "--isolated", "--no-cache", "--fix",
              "--select", "I", "--line-length", length, "-q", FIX_DIR], 30)
        _run([sys.executable, "-m", "ruff", "format", "--isolated", "--no-cache",
              "--line-length", length, "-q", FIX_DIR], 30)
        for path, before in originals.items():
            with open(os.path.join(FIX_DIR, path), encoding="utf-8") as handle:
                after = handle.read()
            if after != before:
                fixed[path] = after
    return {"fixed": fixed, "seconds": round(time.perf_counter() - started, 3)}


def mypy(job: Job) -> MypyOutput:
    done = _run([sys.executable, "-m", "mypy", *job["mypy_args"], job["package"]], 60)
    return {"output": done["stdout"][-50_000:], "exit_code": done["exit_code"],
            "stderr": done["stderr"][-2000:], "timed_out": done["timed_out"],
            "seconds": done["seconds"]}


# -- performance (a child process: the plugin's own code) ------------------------------------------


def grow(value: Any, times: int) -> Any:
    """`value` made `times` larger: lists repeated, text rows repeated under their header, other
    text repeated, objects grown field by field."""
    if isinstance(value, dict):
        return {key: grow(item, times) for key, item in value.items()}
    if isinstance(value, list):
        return value * times
    if isinstance(value, str) and value:
        lines = value.split("\n")
        if len(lines) > 2:
            header = lines[0] if any(mark in lines[0] for mark in ",;\t|") else None
            body = [line for line in (lines[1:] if header is not None else lines) if line]
            return "\n".join(([header] if header is not None else []) + body * times) + "\n"
        return " ".join([value] * times)
    return value


def _time_call(plugin_class: Any, api_factory: Any, command: str, payload: Any,
               budget: float) -> float:
    best = math.inf
    spent = 0.0
    runs = 0
    while runs < 5 and (runs == 0 or spent < budget):
        plugin = plugin_class()
        initialize = getattr(plugin, "on_initialize", None)
        if initialize is not None:
            initialize(api_factory())
        given = json.loads(json.dumps(payload))
        started = time.perf_counter()
        plugin.on_command(command, given)
        took = time.perf_counter() - started
        best, spent, runs = min(best, took), spent + took, runs + 1
        if took > 1.0:
            break
    return best


def performance_child(job: Job) -> None:
    sys.path.insert(0, os.getcwd())
    from _autocoder_host import Api, Settings, Storage

    module_name, _, class_name = job["entry"].partition(":")
    plugin_class = getattr(__import__(module_name, fromlist=[class_name]), class_name)

    def api_factory() -> Any:
        return Api(Settings({}, []), Storage({}, 1024 * 1024), 200, 2000)

    results: list[CommandTiming] = []
    real_stdout = sys.stdout
    sys.stdout = io.StringIO()  # what the plugin prints is not the report
    for command in job["commands"]:
        examples: list[float] = []
        entry: CommandTiming = {"command": command["name"], "examples": examples, "curve": []}
        try:
            for example in command["examples"]:
                examples.append(round(_time_call(
                    plugin_class, api_factory, command["name"], example["input"], 0.2), 6))
            if command["examples"] and job["multipliers"]:
                payload = command["examples"][0]["input"]
                sizes = [1, *job["multipliers"]]
                points: list[tuple[int, float]] = []
                for size in sizes:
                    took = _time_call(plugin_class, api_factory, command["name"],
                                      grow(payload, size), 0.3)
                    points.append((size, took))
                    if took > 3.0:
                        break
                # too fast to judge: one more step (1000x), as long as it stays cheap
                if points[-1][1] < 0.01 and len(points) == len(sizes):
                    size = sizes[-1] * 10
                    points.append((size, _time_call(plugin_class, api_factory,
                                                    command["name"], grow(payload, size), 0.3)))
                entry["curve"] = [[size, round(took, 6)] for size, took in points]
        except BaseException as exc:  # noqa: BLE001 (the plugin's failure, reported)
            entry["error"] = f"{type(exc).__name__}: {exc}"[:500]
        results.append(entry)
        # one line per command, so the commands timed before a timeout are still reported
        real_stdout.write(PERF_MARK + json.dumps({"commands": results}) + "\n")
        real_stdout.flush()


def readme_child(job: Job) -> None:
    sys.path.insert(0, os.getcwd())
    index = int(sys.argv[2])
    code = job["readme_blocks"][index]
    exec(compile(code, f"README.md block {index + 1}", "exec"), {"__name__": "__readme__"})  # noqa: S102 (in the sandbox)


def _child(job: Job, kind: str, timeout: float, *args: str) -> ProcessRun:
    return _run([sys.executable, "-I", "-c", _SOURCE, kind, *args], timeout, json.dumps(job))


def _write(path: str, data: Any) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("perf", "readme"):
        job = json.loads(sys.stdin.read())
        return (performance_child if sys.argv[1] == "perf" else readme_child)(job)
    with open(JOB, encoding="utf-8") as handle:
        job = json.load(handle)
    result: dict[str, Any] = {"seconds": {}}

    def stage(name: str, work: Any) -> None:
        started = time.perf_counter()
        result[name] = work()
        result["seconds"][name] = round(time.perf_counter() - started, 3)
        _write(RESULT, result)  # what is done so far survives a stop of the job

    stage("ruff", lambda: ruff(job))
    stage("autofix", lambda: autofix(job))
    stage("mypy", lambda: mypy(job))
    stage("tests", lambda: tests(job))
    if (result.get("tests") or {}).get("run", {}).get("timed_out"):
        # The code hangs somewhere: timing its commands or its README would wait as long again.
        result["performance"] = {"commands": [], "skipped": "the tests did not finish in time"}
        result["readme"] = []
        _write(RESULT, result)
        return None

    def performance() -> PerformanceOutput:
        done = _child(job, "perf", job["perf_timeout"])
        marked = [line[len(PERF_MARK):] for line in done["stdout"].splitlines()
                  if line.startswith(PERF_MARK)]
        try:
            timed: PerformanceOutput = json.loads(marked[-1]) if marked else {"commands": []}
        except ValueError:
            timed = {"commands": []}
        timed.update({"timed_out": done["timed_out"], "exit_code": done["exit_code"],
                      "stderr": done["stderr"][-2000:]})
        return timed

    stage("performance", performance)

    def readme() -> list[ReadmeRun]:
        runs: list[ReadmeRun] = []
        for index in range(len(job["readme_blocks"])):
            done = _child(job, "readme", 10, str(index))
            runs.append({"block": index + 1, "exit_code": done["exit_code"],
                         "timed_out": done["timed_out"], "stderr": done["stderr"][-1500:]})
        return runs

    stage("readme", readme)
    return None


if __name__ == "__main__":
    main()
