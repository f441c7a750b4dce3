"""The checks every new version passes, whatever its source (run, upload, command line):
plugin.toml and the file tree, the name and version rules, the safety gate, the tests in the
sandbox, the portal's own build of a wheel and an sdist, and a check that those hold only
reviewed files.

Cheap checks come first so a malformed package fails in milliseconds; nothing is written to
the database or the artifact store here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from autocoder.sandbox import Limits, SandboxError
from marketplace.build import (
    IGNORED_INPUTS,
    BuildError,
    BuiltArtifact,
    build_artifacts,
    declared_dependencies,
    generated_sdist_files,
    metadata_text,
    requires_python,
)
from marketplace.models import Plugin, PluginVersion
from marketplace.validation import (
    Manifest,
    PackageError,
    check_plugin_files,
    check_served_artifacts,
    check_version_order,
    normalize_name,
    render_readme,
)
from teams.models import Team

logger = logging.getLogger(__name__)

TEST_LIMITS = Limits(timeout_s=120, memory_mb=1024, cpu_s=120)
MAX_LISTED_FINDINGS = 10
MAX_LISTED_FAILURES = 10


class SafetyFinding(TypedDict):
    """One finding of the safety gate as a version stores it (`PluginVersion.safety_report`)."""

    tool: str
    rule: str
    severity: str
    file: str
    line: int
    message: str


class SafetyReport(TypedDict):
    verdict: str  # "pass" | "review" | "block"
    findings: list[SafetyFinding]


@dataclass(frozen=True)
class CheckedPlugin:
    files: dict[str, str]
    manifest: Manifest
    safety: SafetyReport
    # The sandbox's stored test report and the quality page's figures, kept as they come.
    tests: Mapping[str, object]
    quality: Mapping[str, object]  # the quality pipeline's stages and score (shown, not required)
    artifacts: list[BuiltArtifact]
    readme_html: str
    requires_python: str


# Told the step about to start ("safety", "tests", "build"), so a page can show progress.
Progress = Callable[[str], None]


def plugin_package_check(*, team: Team, files: Mapping[str, str],
                         test_report: Mapping[str, object] | None = None,
                         quality: Mapping[str, object] | None = None) -> CheckedPlugin:
    """Everything a version must pass before it may wait at the publish gate.

    `test_report` (and `quality`) are given for a generation run, whose tests and quality
    pipeline already ran in the sandbox on exactly these files; otherwise they run here.
    Raises PackageError.
    """
    files = dict(files)
    manifest = plugin_quick_check(team=team, files=files)
    return plugin_slow_check(files=files, manifest=manifest, test_report=test_report,
                             quality=quality)


def plugin_quick_check(*, team: Team, files: Mapping[str, str]) -> Manifest:
    """The checks that take milliseconds (plugin.toml, the file tree, the name and version
    rules): an upload answers with these at once; the slow ones run on a worker."""
    manifest = check_plugin_files(dict(files))
    name_and_version_check(team=team, manifest=manifest)
    return manifest


def plugin_slow_check(*, files: Mapping[str, str], manifest: Manifest,
                      test_report: Mapping[str, object] | None = None,
                      quality: Mapping[str, object] | None = None,
                      progress: Progress | None = None) -> CheckedPlugin:
    """The safety gate, the tests and the rest of the quality pipeline in the sandbox (up to
    TEST_LIMITS), and the build. Every test must pass; the other stages and the score are
    shown to reviewers and users, not required (docs/plugins.md, "What an upload must pass")."""
    files = dict(files)
    step = progress or (lambda _step: None)
    step("safety")
    safety = safety_scan(files, manifest)
    if safety["verdict"] == "block":
        raise PackageError(_blocked(safety))
    if test_report is None:
        step("tests")
    if test_report is None:
        tests, quality = tests_run(files, manifest)
    else:
        tests, quality = test_report, quality or {}
    failures = failing_tests(tests)
    if failures:
        raise PackageError(failures)
    step("build")
    artifacts = served_artifacts(files, manifest)
    return CheckedPlugin(files=files, manifest=manifest, safety=safety, tests=tests,
                         quality=quality, artifacts=artifacts,
                         readme_html=render_readme(files["README.md"]),
                         requires_python=requires_python(manifest))


def served_artifacts(files: Mapping[str, str], manifest: Manifest) -> list[BuiltArtifact]:
    """The wheel and sdist the index will serve, checked to hold exactly the reviewed files
    (the builder writes them that way; the check makes sure no mistake ever ships more)."""
    try:
        artifacts = build_artifacts(files, manifest)
        metadata = metadata_text(manifest, files["README.md"],
                                 declared_dependencies(files, manifest))
        portal_files = generated_sdist_files(files, manifest, metadata)
    except BuildError as exc:
        raise PackageError([f"build: {exc}"]) from None
    check_served_artifacts(artifacts, files=files, manifest=manifest,
                           portal_files=portal_files, left_out=IGNORED_INPUTS)
    return artifacts


def name_and_version_check(*, team: Team, manifest: Manifest) -> Plugin | None:
    """The team's existing plugin of this name (or None); PackageError when the name belongs to
    another team or the version does not go up. Names are global, as on PyPI, so a clash can
    reveal that a name is taken, never anything else about the plugin."""
    plugin = Plugin.objects.filter(normalized_name=normalize_name(manifest.name)).first()
    if plugin is None:
        return None
    if plugin.team_id != team.id:
        raise PackageError([f"plugin.toml: the name {manifest.name!r} is already taken by"
                            " another team's plugin; choose another name"])
    taken = (plugin.versions.exclude(status__in=(PluginVersion.Status.REJECTED,
                                                 PluginVersion.Status.FAILED))
             .values_list("version", flat=True))
    check_version_order(manifest.version, taken, name=plugin.name)
    return plugin


def safety_scan(files: Mapping[str, str], manifest: Manifest) -> SafetyReport:
    from autocoder.safety import scan_files

    report = scan_files(dict(files), manifest.permissions)
    return {"verdict": report.verdict,
            "findings": [SafetyFinding(tool=finding.tool, rule=finding.rule,
                                       severity=finding.severity, file=finding.file,
                                       line=finding.line, message=finding.message)
                         for finding in report.findings]}


def _blocked(safety: SafetyReport) -> list[str]:
    findings = [f for f in safety["findings"] if str(f.get("severity", "")).upper() == "HIGH"]
    findings = findings or safety["findings"]
    errors = [f"{f['file']}:{f['line']}: {f['message']} ({f['tool']} {f['rule']})"
              for f in findings[:MAX_LISTED_FINDINGS]]
    more = len(findings) - MAX_LISTED_FINDINGS
    tail = [f"... and {more} more findings"] if more > 0 else []
    return ["safety gate: blocked; the marketplace does not accept this code", *errors, *tail]


def tests_run(files: Mapping[str, str],
              manifest: Manifest) -> tuple[Mapping[str, object], Mapping[str, object]]:
    """The plugin's tests and the rest of the quality pipeline, in one sandbox job, with the
    testing strategy a generation run would default to for what the plugin touches."""
    from autocoder.quality import run_quality
    from autocoder.quality.pages import page_dict
    from autocoder.quality.strategies import default_strategy

    strategy = default_strategy(talks_to_hosts=bool(manifest.hosts or manifest.address_settings),
                                has_secrets=any(s.secret for s in manifest.settings))
    try:
        quality = run_quality(dict(files), strategy=strategy, limits=TEST_LIMITS)
    except (SandboxError, ValueError) as exc:
        raise PackageError([f"tests: the sandbox could not run them ({exc})"]) from None
    report = quality.test_report
    if all(outcome.nodeid == "<session>" for outcome in report.outcomes):
        _raise_if_installation_broken()
    return sandbox_report_dict(report), page_dict(quality)


def _raise_if_installation_broken() -> None:
    """No test result at all: the plugin is to blame only if a known-good one can be tested."""
    from autocoder.sandbox.probe import runtime_fault

    fault = runtime_fault(fresh=True)
    if fault is not None:
        raise PackageError([f"tests: the portal could not test this plugin, because {fault}. "
                            "Nothing was found wrong with the plugin; tell your admin"])


def sandbox_report_dict(report: Any) -> dict[str, object]:
    """The same shape the generation loop stores on an iteration, so pages show both alike."""
    return dict(report.stored())


def failing_tests(report: Mapping[str, Any]) -> list[str]:
    """Why a test report does not allow publication ([] when every test passed)."""
    if report.get("timed_out"):
        return ["tests: timed out in the sandbox"]
    failing = [o for o in report.get("outcomes", []) if o.get("outcome") not in ("passed",
                                                                                 "skipped")]
    if not report.get("passed") and not failing:
        return ["tests: no test ran (is tests/ importable and are the tests named test_*?)"
                + _tail(report)]
    if not failing and not report.get("failed") and not report.get("errors"):
        return []
    errors = [f"tests: {len(failing) or report.get('failed', 0) + report.get('errors', 0)}"
              f" of {len(report.get('outcomes', []))} failed; every test must pass"]
    errors += [f"{o['nodeid']}: {o['outcome']} - {_first_line(o.get('message', ''))}"
               for o in failing[:MAX_LISTED_FAILURES]]
    return errors


def _tail(report: Mapping[str, Any]) -> str:
    tail = (report.get("output_tail") or "").strip().splitlines()[-5:]
    return ("\n" + "\n".join(tail)) if tail else ""


def _first_line(text: str) -> str:
    from autocoder.sandbox.pytest_runner import error_line

    return error_line(text)[:300]
