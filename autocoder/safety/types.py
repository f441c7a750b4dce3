"""Value types of the safety gate."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# What a plugin declares in plugin.toml [permissions]: the plugin contract's type and rule.
from autocoder.plugins.permissions import FILESYSTEM_MODES, Permissions

__all__ = ["FILESYSTEM_MODES", "SEVERITIES", "DEFAULT_PERMISSIONS", "Finding", "Permissions",
           "SafetyReport", "verdict_for"]

SEVERITIES = ("HIGH", "MEDIUM", "LOW")


@dataclass
class Finding:
    tool: str  # "ast" | "bandit" | "syntax"
    rule: str  # our rule name, or bandit's test id (B602, ...)
    severity: str  # "HIGH" | "MEDIUM" | "LOW"
    file: str
    line: int
    message: str
    confidence: str = ""  # bandit's confidence; empty for our own rules (they are certain)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SafetyReport:
    verdict: str  # "pass" | "review" | "block"
    findings: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "findings": [f.as_dict() for f in self.findings]}


DEFAULT_PERMISSIONS = Permissions()


def verdict_for(findings: list[Finding]) -> str:
    severities = {finding.severity for finding in findings}
    if "HIGH" in severities:
        return "block"
    if "MEDIUM" in severities:
        return "review"
    return "pass"
