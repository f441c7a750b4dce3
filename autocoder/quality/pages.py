"""The quality report as pages show it (templates/projects/partials/quality.html): labels in
plain words, each part of the score with its weight, the threshold and the host's fixes."""

from __future__ import annotations

from typing import Any

from autocoder.quality.report import QualityReport
from autocoder.quality.score import WEIGHTS
from autocoder.quality.strategies import strategy

# What a reviewer reads for each stage's and each score part's name (the pages).
STAGE_LABELS = {
    "tests": "Tests",
    "lint": "Style and common mistakes (ruff)",
    "types": "Types (mypy)",
    "coverage": "How much of the code the tests run (coverage)",
    "performance": "Speed on the examples and larger inputs",
    "complexity": "Functions simple enough to follow (complexity)",
    "docs": "README matches the plugin",
}
PART_LABELS = {"tests": "Tests passing", "coverage": "Coverage", "lint": "Style",
               "types": "Types", "performance": "Speed", "docs": "README"}



def page_dict(report: QualityReport, *, threshold: int | None = None,
              fixes: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """`report.as_dict()` with what the pages show besides; `threshold` (0-100) is the one the
    candidate is held to, if any."""
    data = report.as_dict()
    data["parts"] = [{"stage": name, "label": PART_LABELS.get(name, name),
                      "points": round(points), "weight": WEIGHTS.get(name, 0)}
                     for name, points in report.parts.items()]
    for stage in data["stages"]:
        stage["label"] = STAGE_LABELS.get(stage["stage"], stage["stage"])
    data["threshold"] = threshold
    data["strategy"] = strategy(report.strategy).label.lower()
    data["host_fixes"] = sorted(fixes)
    return data
