"""The phases that check the code without a model: the safety gate, then the tests in the
sandbox. A sandbox or plugin runtime that is broken holds the run (InstallationFault) instead of
failing the iteration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autocoder.engine.changing import (
    base_of,
    base_version,
    change_manifest,
    required_nodeids,
    tests_may_change,
)
from autocoder.engine.pending import SafetyFinding
from autocoder.engine.quality_gate import checkpoint_quality, host_fixed
from autocoder.engine.scaffold import plugin_toml, spec_permissions
from autocoder.engine.states import Phase
from autocoder.engine.steps import Step, setting
from autocoder.engine.transitions import Transition
from autocoder.installation import InstallationFault
from autocoder.plugins import Permissions, permissions_or_none
from autocoder.sandbox.types import PluginRuntimeError, SandboxError

if TYPE_CHECKING:  # the gate itself is imported where it runs (gate_phase)
    from autocoder.safety.types import Finding


def gate_phase(step: Step) -> Transition:
    from autocoder.safety import scan_files

    pending = step.pending
    files = pending["files"]
    # plugin.toml is the host's to write (protected), so it says what was granted so far
    granted = permissions_or_none(files.get("plugin.toml", "")) or spec_permissions(step.spec)
    report = scan_files(files, granted)
    files = pending["files"] = _with_declared_libraries(step, files, granted)
    pending["safety"] = {
        "verdict": report.verdict,
        "findings": [_finding_dict(f) for f in report.findings],
    }
    # Code the gate blocks never reaches the sandbox: the iteration fails on the findings.
    blocked = report.verdict == "block"
    return Transition(phase=Phase.VERIFY if blocked else Phase.SANDBOX, pending=pending,
                      notes=[{"kind": "run.safety", "verdict": report.verdict,
                              "findings": len(report.findings)}])


def _with_declared_libraries(step: Step, files: dict[str, str],
                             granted: Permissions) -> dict[str, str]:
    """plugin.toml lists the plugin runtime's libraries the code imports (the wheel declares
    them too); the manifest is the host's to write, so it is kept in step here. A change run
    keeps the version's manifest, with its next version number (changing.change_manifest)."""
    from autocoder.safety.imports import used_libraries

    pins = [f"{lib.distribution}=={lib.version}" for lib in used_libraries(files)]
    base = base_of(step.run)
    manifest = (base and change_manifest(step.spec, base, base_version(step.run),
                                         permissions=granted, libraries=pins,
                                         words_from=files.get("plugin.toml", ""))) \
        or plugin_toml(step.spec, permissions=granted, libraries=pins)
    return files if files.get("plugin.toml") == manifest else {**files, "plugin.toml": manifest}


def _finding_dict(finding: Finding) -> SafetyFinding:
    return {"tool": finding.tool, "rule": finding.rule, "severity": finding.severity,
            "file": finding.file, "line": finding.line, "message": finding.message}


def sandbox_phase(step: Step) -> Transition:
    """The tests and the rest of the quality pipeline, in one sandbox job (quality_gate.py)."""
    from autocoder.quality import run_quality
    from autocoder.sandbox import Limits

    pending = step.pending
    limits = Limits(timeout_s=float(setting("ENGINE_SANDBOX_TIMEOUT_S", 60)),
                    memory_mb=int(setting("ENGINE_SANDBOX_MEMORY_MB", 512)))
    candidate: dict[str, str | bytes] = {**pending["files"]}
    try:
        quality = run_quality(candidate, strategy=step.spec.testing_strategy,
                              limits=limits, cancel_check=step.cancelled)
    except SandboxError as error:
        raise _installation_fault(error) from error
    report = quality.test_report
    if not report.outcomes or _runner_crashed(report):
        _raise_if_installation_broken()
    pending["report"] = report_dict(report)
    fixes = host_fixed(step.spec, pending["files"], quality.fixed_files)
    pending["files"] = {**pending["files"], **fixes}
    pending["quality"] = checkpoint_quality(quality, step.spec, list(fixes))
    if base_of(step.run):  # a change run: the version's tests and the regression tests
        pending["required_tests"] = required_nodeids(
            pending["files"], may_change=tests_may_change(step.run))
    return Transition(phase=Phase.VERIFY, pending=pending,
                      notes=[{"kind": "run.tests", "passed": report.passed,
                              "failed": report.failed, "errors": report.errors,
                              "pass_rate": report.pass_rate,
                              "quality_score": quality.score}])


def _runner_crashed(report: Any) -> bool:
    """Only the runner's own "<session>" problem and no test outcome: nothing ran."""
    return all(o.nodeid == "<session>" for o in report.outcomes)


def _raise_if_installation_broken() -> None:
    """A test run that said nothing is the model's fault only if a known-good plugin's tests
    do run: otherwise the runtime or the sandbox is broken and the run must be held."""
    from autocoder.sandbox.probe import runtime_fault

    fault = runtime_fault(fresh=True)
    if fault is not None:
        raise fault


def _installation_fault(error: SandboxError) -> InstallationFault:
    from autocoder.runtime import BUILD_FIX
    from autocoder.sandbox.probe import SANDBOX_FIX

    if isinstance(error, PluginRuntimeError):
        return InstallationFault("runtime", error.problem, BUILD_FIX)
    return InstallationFault("sandbox", str(error), SANDBOX_FIX)


def report_dict(report: Any) -> dict[str, Any]:
    return dict(report.stored())
