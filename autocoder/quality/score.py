"""The quality score: one number 0-100 from six visible parts. Defined here only; documented in
docs/engine.md ("The quality score")."""

from __future__ import annotations

from autocoder.quality.report import StageResult
from autocoder.sandbox.pytest_runner import TestReport

# Each part's weight (they add up to 100).
WEIGHTS = {"tests": 35, "coverage": 15, "lint": 10, "types": 10, "performance": 15, "docs": 15}
# What one finding costs of its part (a share of the part's weight).
LINT_COST = 0.2  # each lint or complexity finding; five take the whole part
TYPES_COST = 0.25  # each type error; four take the whole part
DOCS_COST = 0.25  # each documentation finding; four take the whole part
COVERAGE_FULL = 0.8  # line coverage that earns the whole coverage part (scaled below it)


def parts(stages: dict[str, StageResult], tests: TestReport) -> dict[str, float]:
    def spent(names: tuple[str, ...], cost: float) -> float:
        count = sum(len(stages[name].findings) for name in names if name in stages)
        failed = any(not stages[name].passed for name in names if name in stages)
        share = max(0.0, 1.0 - cost * count)
        return min(share, 1.0 - cost) if failed else share

    coverage = stages["coverage"].detail
    line_rate = float(coverage.get("line_rate", 0.0))
    commands = int(coverage.get("commands", 0))
    covered = commands - len(coverage.get("uncovered_commands", []))
    command_share = covered / commands if commands else 1.0
    timed = int(stages["performance"].detail.get("commands_timed", 0))
    flagged = len(stages["performance"].detail.get("flagged", []))
    return {
        "tests": WEIGHTS["tests"] * tests.pass_rate,
        "coverage": WEIGHTS["coverage"] * min(1.0, line_rate / COVERAGE_FULL) * command_share,
        "lint": WEIGHTS["lint"] * spent(("lint", "complexity"), LINT_COST),
        "types": WEIGHTS["types"] * spent(("types",), TYPES_COST),
        "performance": WEIGHTS["performance"] * (max(0.0, 1.0 - flagged / timed) if timed else
                                                 (1.0 if stages["performance"].passed else 0.0)),
        "docs": WEIGHTS["docs"] * spent(("docs",), DOCS_COST),
    }


def total(values: dict[str, float]) -> int:
    return max(0, min(100, round(sum(values.values()))))
