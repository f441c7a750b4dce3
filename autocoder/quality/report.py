"""What the quality pipeline found: one result per stage, the score, the files the host may fix
(docs/engine.md, "The quality pipeline")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from autocoder.sandbox.pytest_runner import TestReport, error_line

STAGES = ("tests", "lint", "types", "coverage", "performance", "complexity", "docs")
# The order the implementer reads them in: what breaks the plugin first, polish last.
PROMPT_ORDER = ("tests", "types", "coverage", "performance", "docs", "lint", "complexity")


@dataclass(frozen=True)
class Finding:
    message: str
    where: str = ""  # "pkg/plugin.py:12", a command's name, "README.md"; "" for the whole plugin

    def as_dict(self) -> dict[str, str]:
        return {"message": self.message, "where": self.where}


class StageDetail(TypedDict, total=False):
    """A stage's figures (stages.py writes them; score.py and the pages read them)."""
    passed: int  # tests
    failed: int
    errors: int
    pass_rate: float
    job: str  # why the quality job stopped early
    bound: int  # complexity
    autofix_s: float  # lint
    line_rate: float  # coverage
    branch_rate: float
    coverage_min: float
    commands: int
    uncovered_commands: list[str]
    missing_lines: dict[str, list[int]]
    commands_timed: int  # performance
    flagged: list[str]
    examples_s: dict[str, list[float] | None]
    curves: dict[str, list[list[float]] | None]
    examples_run: int  # docs


class StageDict(TypedDict, total=False):
    stage: str
    passed: bool
    findings: list[dict[str, str]]
    seconds: float
    detail: StageDetail  # only when there are figures


class TestCounts(TypedDict):
    passed: int
    failed: int
    errors: int
    pass_rate: float


class QualityDict(TypedDict):
    """`QualityReport.as_dict()`: what a run stores of its candidate's quality."""
    score: int
    strategy: str
    parts: dict[str, float]
    passed: bool
    stages: list[StageDict]
    tests: TestCounts
    fixed_files: list[str]
    seconds: float


@dataclass
class StageResult:
    stage: str
    passed: bool
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0
    detail: StageDetail = field(default_factory=StageDetail)  # figures: coverage %, curves

    def as_dict(self) -> StageDict:
        return {"stage": self.stage, "passed": self.passed,
                "findings": [f.as_dict() for f in self.findings],
                "seconds": round(self.seconds, 3), **({"detail": self.detail}
                                                      if self.detail else {})}


@dataclass
class QualityReport:
    score: int
    parts: dict[str, float]  # the score's parts (score.py), each out of its weight
    stages: list[StageResult]
    test_report: TestReport
    fixed_files: dict[str, str]
    strategy: str
    seconds: float = 0.0  # the whole pipeline, host side included

    def stage(self, name: str) -> StageResult:
        return next(s for s in self.stages if s.stage == name)

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.stages)

    def as_dict(self) -> QualityDict:
        return {"score": self.score, "strategy": self.strategy,
                "parts": {name: round(value, 2) for name, value in self.parts.items()},
                "passed": self.passed,
                "stages": [s.as_dict() for s in self.stages],
                "tests": {"passed": self.test_report.passed, "failed": self.test_report.failed,
                          "errors": self.test_report.errors,
                          "pass_rate": self.test_report.pass_rate},
                "fixed_files": sorted(self.fixed_files), "seconds": round(self.seconds, 3)}

    def prompt_findings(self, max_chars: int) -> str:
        """The findings in words for the implementer's next prompt, most important first,
        cut at `max_chars` (whole lines only)."""
        lines: list[str] = []
        by_name = {s.stage: s for s in self.stages}
        for name in PROMPT_ORDER:
            result = by_name.get(name)
            if result is None or result.passed:  # a passed stage's notes are for reviewers
                continue
            failing = [o for o in self.test_report.outcomes if o.outcome in ("failed", "error")]
            if name == "tests" and failing:
                lines += [f"- tests: {o.nodeid} {o.outcome}: {error_line(o.message)}"
                          for o in failing]
                continue
            for finding in result.findings:
                where = f" {finding.where}:" if finding.where else ""
                lines.append(f"- {name}:{where} {finding.message}")
        text, used = [], 0
        header = f"Quality score {self.score}/100. Fix these, most important first:"
        for line in [header, *lines] if lines else []:
            if used + len(line) + 1 > max_chars:
                break
            text.append(line)
            used += len(line) + 1
        return "\n".join(text)
