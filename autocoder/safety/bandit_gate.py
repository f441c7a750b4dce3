"""bandit, through its Python API, with `# nosec` ignored: generated code cannot silence it."""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path

from autocoder.safety.rules import is_test_file
from autocoder.safety.types import Finding

SEVERITY = {"HIGH": "HIGH", "MEDIUM": "MEDIUM", "LOW": "LOW", "UNDEFINED": "LOW"}

# bandit tests about code that ships, not about a plugin's tests (which run only in the
# sandbox): B101 assert_used warns that `python -O` strips asserts, but in a test file the
# assert is the test. There they are not findings at all, so they neither show nor count.
NOT_FOR_TEST_FILES: frozenset[str] = frozenset({"B101"})


def applies(tool: str, rule: str, path: str) -> bool:
    """Whether a finding of `tool`'s `rule` in the file `path` is one (stored reports written
    before a rule was narrowed are read through this too)."""
    return not (tool == "bandit" and rule in NOT_FOR_TEST_FILES and is_test_file(path))


def _config():  # type: ignore[no-untyped-def]
    from bandit.core import config as b_config

    return b_config.BanditConfig()


def _bandit_manager_module():  # type: ignore[no-untyped-def]
    # bandit's log is not for users: a file it cannot scan becomes a finding instead, and
    # stevedore reports at ERROR level that bandit's optional SARIF formatter is missing.
    logging.getLogger("bandit").setLevel(logging.CRITICAL)
    stevedore = logging.getLogger("stevedore.extension")
    level = stevedore.level
    stevedore.setLevel(logging.CRITICAL)
    try:
        with warnings.catch_warnings():  # stevedore deprecations, nothing about scanned code
            warnings.simplefilter("ignore", DeprecationWarning)
            from bandit.core import manager
    finally:
        stevedore.setLevel(level)
    return manager


def bandit_findings(files: dict[str, str]) -> list[Finding]:
    """bandit's findings for the given sources (relative path -> text), all tests enabled."""
    if not files:
        return []
    b_manager = _bandit_manager_module()
    with tempfile.TemporaryDirectory(prefix="autocoder-bandit-") as scratch:
        root = Path(scratch)
        paths = {}
        for name, source in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(source, encoding="utf-8")
            paths[str(target)] = name
        manager = b_manager.BanditManager(_config(), "file", quiet=True, ignore_nosec=True)
        manager.discover_files(sorted(paths), recursive=False)
        manager.run_tests()
        findings = [finding for finding in (_finding(issue, paths)
                                            for issue in manager.get_issue_list())
                    if applies(finding.tool, finding.rule, finding.file)]
        findings += [
            Finding("bandit", "scan-failed", "MEDIUM", paths.get(fname, fname), 1,
                    f"bandit could not scan this file ({reason}); a human must look at it")
            for fname, reason in manager.get_skipped()
            if "syntax error" not in reason  # the AST policy reports those itself
        ]
    return findings


def _finding(issue, paths: dict[str, str]) -> Finding:  # type: ignore[no-untyped-def]
    return Finding(
        tool="bandit", rule=issue.test_id, severity=SEVERITY.get(issue.severity, "LOW"),
        file=paths.get(issue.fname, issue.fname), line=int(issue.lineno or 1),
        message=f"{issue.test} ({issue.test_id}): {issue.text}",
        confidence=str(issue.confidence),
    )
