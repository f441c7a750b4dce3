"""The quality pipeline: every candidate checked beyond its tests (docs/engine.md, "The quality
pipeline"). `run_quality` runs it; `QualityReport` is what it found."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autocoder.quality.pipeline import run_quality
    from autocoder.quality.report import Finding, QualityReport, StageResult

__all__ = ["Finding", "QualityReport", "StageResult", "run_quality"]


def __getattr__(name: str) -> Any:  # imported on first use: strategies.py stays light
    if name == "run_quality":
        from autocoder.quality.pipeline import run_quality

        return run_quality
    if name in ("Finding", "QualityReport", "StageResult"):
        from autocoder.quality import report

        return getattr(report, name)
    raise AttributeError(name)
