"""The quality report as pages show it (templates/projects/partials/quality.html): labels in
plain words, each part of the score with its weight, the threshold and the host's fixes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from autocoder.quality.report import QualityReport
from autocoder.quality.score import WEIGHTS
from autocoder.quality.strategies import strategy

# What a reviewer reads for each stage's and each score part's name (the pages).
STAGE_LABELS = {
    "tests": "The plugin's own tests",
    "lint": "Style and common mistakes (ruff)",
    "types": "Types (mypy)",
    "coverage": "How much of the code the tests run (coverage)",
    "performance": "Speed on the examples and larger inputs",
    "complexity": "Functions simple enough to follow (complexity)",
    "docs": "README matches the plugin",
}
# The score's parts are points, never tests: "Tests: 35 of 35 points" beside "1 test, passing".
PART_LABELS = {"tests": "Tests", "coverage": "Coverage", "lint": "Style",
               "types": "Types", "performance": "Speed", "docs": "README"}


def page_dict(report: QualityReport, *, threshold: int | None = None,
              fixes: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """`report.as_dict()` with what the pages show besides; `threshold` (0-100) is the one the
    candidate is held to, if any."""
    data: dict[str, object] = dict(report.as_dict())
    data["threshold"] = threshold
    data["strategy"] = strategy(report.strategy).label.lower()
    data["host_fixes"] = sorted(fixes)
    return page_words(data)


def page_words(data: Mapping[str, Any]) -> dict[str, Any]:
    """The words of a quality dict for the pages, worked out again from its figures, so a dict
    stored before the words changed reads right too: each part of the score in points, the
    tests counted as tests, the coverage as lines and commands."""
    shown = dict(data)
    stages = [dict(stage) for stage in data.get("stages") or [] if isinstance(stage, Mapping)]
    by_name = {str(stage.get("stage")): stage for stage in stages}
    notes = {"tests": tests_words(_tests_counts(data, by_name.get("tests"))),
             "coverage": _coverage_words(by_name.get("coverage"))}
    shown["parts"] = [{"stage": name, "label": PART_LABELS.get(name, name),
                       "points": round(points), "weight": WEIGHTS.get(name, 0),
                       "note": notes.get(name, "")}
                      for name, points in _points(data.get("parts"))]
    for stage in stages:
        name = str(stage.get("stage"))
        stage["label"] = STAGE_LABELS.get(name, name)
        stage["summary"] = notes.get(name, "")
    shown["stages"] = stages
    return shown


def tests_words(counts: tuple[int, int]) -> str:
    """"1 test, passing", "18 tests, all passing", "17 of 18 tests passing", "no test ran"."""
    passed, total = counts
    if total == 0:
        return "no test ran"
    if passed == total:
        return "1 test, passing" if total == 1 else f"{total} tests, all passing"
    return f"{passed} of {total} test{'s' if total != 1 else ''} passing"


def _tests_counts(data: Mapping[str, Any], stage: Mapping[str, Any] | None) -> tuple[int, int]:
    counts = data.get("tests")
    if not isinstance(counts, Mapping):
        counts = (stage or {}).get("detail") or {}
    passed, failed, errors = (_int(counts.get(key)) for key in ("passed", "failed", "errors"))
    return passed, passed + failed + errors


def _coverage_words(stage: Mapping[str, Any] | None) -> str:
    detail = (stage or {}).get("detail")
    if not isinstance(detail, Mapping) or "line_rate" not in detail:
        return ""
    commands = _int(detail.get("commands"))
    uncovered = detail.get("uncovered_commands") or []
    run = commands - (len(uncovered) if isinstance(uncovered, list) else 0)
    lines = f"the tests run {float(detail.get('line_rate') or 0):.0%} of the lines"
    if not commands:
        return lines
    if run == commands:
        return lines + (" and its command" if commands == 1 else f" and all {commands} commands")
    return lines + f" and {run} of {commands} command{'s' if commands != 1 else ''}"


def _points(parts: Any) -> list[tuple[str, float]]:
    """The parts as (name, points): the report's {name: points}, or the list a page dict
    stored."""
    if isinstance(parts, Mapping):
        return [(str(name), float(points)) for name, points in parts.items()]
    if isinstance(parts, list):
        return [(str(part.get("stage")), float(part.get("points") or 0)) for part in parts
                if isinstance(part, Mapping)]
    return []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
