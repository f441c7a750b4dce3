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
from autocoder.quality.pages import page_dict

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
    """The report as the iteration keeps it and the pages show it, with the findings in words
    for the next prompts."""
    data = page_dict(report, threshold=threshold_points(spec), fixes=fixes)
    data["prompt"] = report.prompt_findings(PROMPT_CHARS)
    return data


def quality_met(spec: Spec, quality: dict[str, Any]) -> bool:
    return int(quality.get("score", 0)) >= threshold_points(spec)


def quality_failure(spec: Spec, quality: dict[str, Any]) -> str:
    """The findings in words for the next prompts, when the score is below the threshold.
    Failing tests are left out: the failures list each of them already, with its output."""
    head = (f"The quality score {quality.get('score', 0)}/100 is below the required "
            f"{threshold_points(spec)}.")
    lines = [line for line in str(quality.get("prompt") or "").splitlines()
             if not line.startswith("- tests: ")]
    findings = lines[1:]  # the first line is the report's own header (its score)
    return "\n".join([head, "Fix these, most important first:", *findings]) if findings \
        else head
