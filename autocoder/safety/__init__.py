"""The static safety gate: an AST policy that follows the plugin's declared permissions,
plus bandit. It runs before any generated code reaches the sandbox."""

from __future__ import annotations

from autocoder.safety.bandit_gate import applies as finding_applies
from autocoder.safety.scan import read_permissions, scan_directory, scan_files
from autocoder.safety.types import Finding, Permissions, SafetyReport

__all__ = ["Finding", "Permissions", "SafetyReport", "finding_applies", "read_permissions",
           "scan_directory", "scan_files"]
