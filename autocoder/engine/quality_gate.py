"""The quality pipeline in the loop: what an iteration keeps of it, and the gate on its score
(docs/engine.md, "The quality pipeline").

The sandbox phase runs the pipeline (autocoder/quality) on every candidate the safety gate lets
through; the host applies its safe fixes (formatting, import order) to the files the model may
write, and the checkpoint shows them in the diff as the host's change. The verify phase passes a
candidate when every acceptance test passes and the score meets the spec's threshold: a pass rate
alone no longer does.
"""

from __future__ import annotations

from typing import Any

from autocoder.engine.scaffold import protected_paths
from autocoder.engine.spec import Spec
from autocoder.quality.strategies import strategy

# What a reviewer reads for each stage's name.
STAGE_LABELS = {
    "tests": "Tests",
    "lint": "Style and common mistakes (ruff)",
    "types": "Types (mypy)",
    "coverage": "How much of the code the tests run (coverage)",
    "performance": "Speed on the examples and larger inputs",
    "complexity": "Functions too complicated to follow",
    "docs": "README checked against the plugin",
}
PART_LABELS = {"tests": "Tests passing", "coverage": "Coverage", "lint": "Style",
               "types": "Types", "performance": "Speed", "docs": "README"}
PROMPT_CHARS = 1400  # the findings' share of the failures the next prompts read


def threshold_points(spec: Spec) -> int:
    """The spec's quality threshold (0-1) on the score's 0-100 scale."""
    return round(spec.quality_threshold * 100)


def host_fixed(spec: Spec, files: dict[str, Any], fixed: dict[str, str]) -> dict[str, str]:
    """The pipeline's safe fixes the host applies: never to a path the model may not write
    (the acceptance tests, the harness, plugin.toml), never where nothing changed."""
    closed = protected_paths(spec)
    return {path: text for path, text in fixed.items()
            if path not in closed and isinstance(files.get(path), str) and files[path] != text}


def checkpoint_quality(report: Any, spec: Spec, fixes: list[str]) -> dict[str, Any]:
    """The report as the iteration keeps it and the pages show it."""
    data = report.as_dict()
    weights = _weights()
    data["parts"] = [{"stage": name, "label": PART_LABELS.get(name, name),
                      "points": round(points), "weight": weights.get(name, 0)}
                     for name, points in (data.get("parts") or {}).items()]
    for stage in data.get("stages", []):
        stage["label"] = STAGE_LABELS.get(stage["stage"], stage["stage"])
    data["threshold"] = threshold_points(spec)
    data["strategy"] = strategy(report.strategy).label.lower()
    data["host_fixes"] = sorted(fixes)
    data["prompt"] = report.prompt_findings(PROMPT_CHARS)
    return data


def quality_met(spec: Spec, quality: dict[str, Any]) -> bool:
    return int(quality.get("score", 0)) >= threshold_points(spec)


def quality_failure(spec: Spec, quality: dict[str, Any]) -> str:
    """The findings in words for the next prompts, when the score is below the threshold."""
    head = (f"The quality score {quality.get('score', 0)}/100 is below the required "
            f"{threshold_points(spec)}.")
    prompt = str(quality.get("prompt") or "")
    return f"{head}\n{prompt}" if prompt else head


def _weights() -> dict[str, int]:
    from autocoder.quality.score import WEIGHTS

    return dict(WEIGHTS)
