"""`run_quality`: every stage of the quality pipeline on one candidate, in one sandbox job
(docs/engine.md, "The quality pipeline").

The job runs driver.py on the plugin runtime: the plugin's tests under coverage (the same
pytest command, report plugin and harness as `run_pytest`, so `QualityReport.test_report` can
stand in for the loop's test run), ruff, ruff's safe fixes on a copy, mypy with a warm cache,
the timing runs and the README's examples. The README is also checked here against the
manifest. The score is score.py's.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from autocoder.plugins.manifest import PluginManifest, read_manifest
from autocoder.quality import mypy_cache, score
from autocoder.quality.docs_check import check_readme, readme_text, runnable_blocks
from autocoder.quality.report import STAGES, QualityReport
from autocoder.quality.rules import LINE_LENGTH, LINT_IGNORE, LINT_SELECT, MAX_COMPLEXITY
from autocoder.quality.stages import (
    coverage_stage,
    docs_stage,
    lint_stages,
    performance_stage,
    tests_stage,
    types_stage,
)
from autocoder.quality.strategies import strategy as strategy_named
from autocoder.runtime.storable import storable_loads
from autocoder.sandbox.pytest_runner import (
    _HARNESS_FILES,
    _PLUGIN_SOURCE,
    PLUGIN_MODULE,
    REPORT_FILE,
    build_report,
    pytest_command,
)
from autocoder.sandbox.runner import run
from autocoder.sandbox.types import DEFAULT_LIMITS, Limits, RunResult
from autocoder.sandbox.workdir import RESERVED_DIR

if TYPE_CHECKING:  # driver.py runs in the sandbox; its types describe the job and its result
    from autocoder.quality.driver import Command, DriverResult, Job, TestsOutput

DRIVER_PATH = f"{RESERVED_DIR}/quality_driver.py"
JOB_PATH = f"{RESERVED_DIR}/quality-job.json"
RESULT_PATH = f"{RESERVED_DIR}/quality-result.json"
_DRIVER = Path(__file__).with_name("driver.py").read_text()
# Beyond the tests' own time: lint, types, the timing runs and the README's examples.
EXTRA_TIMEOUT_S = 45
PERF_TIMEOUT_S = 20


def run_quality(files: dict[str, str | bytes], *, strategy: str = "basic",
                limits: Limits | None = None, cancel_check: Callable[[], bool] | None = None,
                backend: str | None = None) -> QualityReport:
    """Run the pipeline on a plugin's files. Raises what `run_pytest` raises (SandboxError,
    PluginRuntimeError, ValueError for reserved file names)."""
    started = time.perf_counter()
    rule = strategy_named(strategy)
    limits = limits or DEFAULT_LIMITS
    reserved = [name for name in files if name.startswith(RESERVED_DIR + "/")
                or name in (f"{PLUGIN_MODULE}.py", *_HARNESS_FILES)]
    if reserved:
        raise ValueError(f"file names reserved for the quality pipeline: {reserved}")
    manifest_text = files.get("plugin.toml")
    if isinstance(manifest_text, bytes):
        manifest_text = manifest_text.decode("utf-8", "replace")
    manifest = read_manifest(manifest_text) if manifest_text else None
    package = _package(files, manifest)
    readme = readme_text(files)
    blocks = runnable_blocks(readme) if readme else []
    job = _job(files, manifest, package, rule.large_inputs, blocks, limits)
    job_files: dict[str, str | bytes] = {
        **files, f"{PLUGIN_MODULE}.py": _PLUGIN_SOURCE, **_HARNESS_FILES,
        DRIVER_PATH: _DRIVER, JOB_PATH: json.dumps(job),
        mypy_cache.CONFIG_PATH: mypy_cache.CONFIG, **mypy_cache.cache_files(backend)}
    job_limits = dataclasses.replace(
        limits, timeout_s=limits.timeout_s + EXTRA_TIMEOUT_S,
        cpu_s=max(limits.cpu_s, int(limits.timeout_s) + EXTRA_TIMEOUT_S),
        collect_kb=max(limits.collect_kb, 4096))
    result = run(job_files, ["python", DRIVER_PATH], job_limits, backend=backend,
                 collect=[REPORT_FILE, RESULT_PATH], cancel_check=cancel_check)
    raw = _load(result.files.get(RESULT_PATH))
    seconds = raw.get("seconds", {}) if isinstance(raw.get("seconds"), dict) else {}
    tested: TestsOutput = raw.get("tests") or {}
    test_report = build_report(_test_run(result, raw.get("tests")))
    lint, complexity = lint_stages(raw.get("ruff"), float(seconds.get("ruff", 0)))
    host_started = time.perf_counter()
    docs_findings = check_readme(readme, manifest)
    docs_seconds = time.perf_counter() - host_started + float(seconds.get("readme", 0))
    stages = {
        "tests": tests_stage(test_report, float(seconds.get("tests", 0))),
        "lint": lint,
        "types": types_stage(raw.get("mypy"), float(seconds.get("mypy", 0))),
        "coverage": coverage_stage(tested, files, manifest, package, rule, 0.0),
        "performance": performance_stage(raw.get("performance"),
                                         float(seconds.get("performance", 0)),
                                         PERF_TIMEOUT_S,
                                         [c.name for c in manifest.commands] if manifest else []),
        "complexity": complexity,
        "docs": docs_stage(docs_findings, raw.get("readme"), docs_seconds),
    }
    if not raw:
        why = result.killed_reason or f"exit code {result.exit_code}"
        for name in ("lint", "types", "performance", "complexity"):
            stages[name].passed = False
        stages["tests"].detail["job"] = f"the quality job stopped early ({why})"
    fixed = raw.get("autofix", {}).get("fixed", {}) if isinstance(raw.get("autofix"), dict) \
        else {}
    fixed_files = {path: text for path, text in fixed.items()
                   if isinstance(text, str) and path in files}
    values = score.parts(stages, test_report)
    stages["lint"].detail["autofix_s"] = float(seconds.get("autofix", 0))
    return QualityReport(score=score.total(values), parts=values,
                         stages=[stages[name] for name in STAGES], test_report=test_report,
                         fixed_files=fixed_files, strategy=rule.key,
                         seconds=time.perf_counter() - started)


def _package(files: dict[str, str | bytes], manifest: PluginManifest | None) -> str:
    if manifest is not None and manifest.package:
        return manifest.package
    tops = sorted({name.split("/", 1)[0] for name in files
                   if name.count("/") == 1 and name.endswith("/__init__.py")} - {"tests"})
    return tops[0] if tops else "."


def _job(files: dict[str, str | bytes], manifest: PluginManifest | None, package: str,
         multipliers: tuple[int, ...], blocks: list[str], limits: Limits) -> Job:
    python_files = sorted(name for name in files if name.endswith(".py"))
    lint_paths = [name for name in python_files
                  if name.startswith((package + "/", "tests/")) and "/" in name]
    commands: list[Command] = [{"name": c.name, "examples": list(c.examples)}
                for c in (manifest.commands if manifest else ())]
    return {
        "package": package, "entry": manifest.entry if manifest else f"{package}.plugin:Plugin",
        "pytest_argv": pytest_command(["tests"])[1:],  # after `python`: -m pytest ...
        "tests_timeout": limits.timeout_s,
        "line_length": LINE_LENGTH, "ruff_select": list(LINT_SELECT),
        "ruff_ignore": list(LINT_IGNORE), "max_complexity": MAX_COMPLEXITY,
        "lint_paths": lint_paths or ["."],
        "fix_paths": [name for name in python_files if name.startswith(package + "/")],
        "mypy_args": list(mypy_cache.ARGS),
        "commands": commands, "multipliers": list(multipliers), "perf_timeout": PERF_TIMEOUT_S,
        "readme_blocks": blocks,
    }


def _load(raw: bytes | None) -> DriverResult:
    """The driver's result, made storable: it quotes the plugin's own words (an example's
    error, a README block's stderr, its tests' output), which may hold a NUL."""
    try:
        data = storable_loads(raw) if raw else {}
    except ValueError:
        return {}
    # the stages check every part's shape (stages.py): the type says what the driver writes
    return cast("DriverResult", data) if isinstance(data, dict) else {}


def _test_run(result: RunResult, tests: Any) -> RunResult:
    """The sandbox run as `run_pytest` would have reported it: the pytest process's own exit
    code and output, the job's report file."""
    files = {REPORT_FILE: result.files[REPORT_FILE]} if REPORT_FILE in result.files else {}
    run_info = tests.get("run") if isinstance(tests, dict) else None
    if not isinstance(run_info, dict):
        return dataclasses.replace(result, files=files)
    timed_out = bool(run_info.get("timed_out"))
    return dataclasses.replace(
        result, exit_code=run_info.get("exit_code"), stdout=str(run_info.get("stdout", "")),
        stderr=str(run_info.get("stderr", "")), timed_out=timed_out or result.timed_out,
        killed_reason="timeout" if timed_out else result.killed_reason,
        duration_ms=int(float(run_info.get("seconds", 0)) * 1000), files=files)
