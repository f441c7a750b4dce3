"""Value types of the safety gate."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SEVERITIES = ("HIGH", "MEDIUM", "LOW")
FILESYSTEM_MODES = ("none", "workdir")


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


@dataclass(frozen=True)
class Permissions:
    """What a plugin declares in plugin.toml [permissions] (docs/engine.md, "The plugin
    contract")."""

    network: bool = False
    filesystem: str = "none"  # "none" | "workdir"

    def __post_init__(self) -> None:
        if not isinstance(self.network, bool):
            raise ValueError(f"permissions.network must be true or false, not {self.network!r}")
        if self.filesystem not in FILESYSTEM_MODES:
            raise ValueError(f"permissions.filesystem must be one of {FILESYSTEM_MODES}, "
                             f"not {self.filesystem!r}")


DEFAULT_PERMISSIONS = Permissions()


def verdict_for(findings: list[Finding]) -> str:
    severities = {finding.severity for finding in findings}
    if "HIGH" in severities:
        return "block"
    if "MEDIUM" in severities:
        return "review"
    return "pass"
