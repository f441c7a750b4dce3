"""bandit, through its Python API, with `# nosec` ignored: generated code cannot silence it."""

from __future__ import annotations

import logging
import tempfile
import warnings
from pathlib import Path

from autocoder.safety.types import Finding

SEVERITY = {"HIGH": "HIGH", "MEDIUM": "MEDIUM", "LOW": "LOW", "UNDEFINED": "LOW"}


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
        findings = [_finding(issue, paths) for issue in manager.get_issue_list()]
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
